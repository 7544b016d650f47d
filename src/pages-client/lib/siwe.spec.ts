import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { siweMessage } from './siwe';

describe('the onboarding page SIWE message', () => {
  it('is exactly what the siwe package prepares for the same fields, and verifies', async () => {
    const wallet = Wallet.createRandom();
    const fields = {
      domain: 'localhost:3999',
      address: wallet.address.toLowerCase(),
      statement: 'Connect this wallet to receive payments.',
      uri: 'http://localhost:3999/onboarding/abc',
      chainId: 31337n,
      nonce: '0123456789abcdef0123456789abcdef',
      issuedAt: new Date('2026-01-02T03:04:05.678Z'),
      expirationTime: new Date(Date.now() + 600000),
    };
    const text = siweMessage(fields);
    const reference = new SiweMessage({
      domain: fields.domain,
      address: wallet.address,
      statement: fields.statement,
      uri: fields.uri,
      version: '1',
      chainId: 31337,
      nonce: fields.nonce,
      issuedAt: fields.issuedAt.toISOString(),
      expirationTime: fields.expirationTime.toISOString(),
    }).prepareMessage();
    expect(text).toBe(reference);
    const parsed = new SiweMessage(text);
    const result = await parsed.verify({ signature: await wallet.signMessage(text), domain: fields.domain, nonce: fields.nonce });
    expect(result.success).toBe(true);
  });
});
