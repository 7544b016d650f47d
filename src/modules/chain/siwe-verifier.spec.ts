import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import type { AssetRegistry } from './asset-registry';
import { MAX_CONTRACT_CHECKS, SignatureCheckUnavailable, SiweVerifier } from './siwe-verifier.service';

/** A chain whose contract checks answer only when told: each call's answer is resolved by the test. */
function registryWithPendingChecks() {
  const pending: Array<(valid: boolean) => void> = [];
  const reader = { isValidSignature: () => new Promise<boolean>((resolve) => pending.push(resolve)) };
  const assets = { asset: () => ({ chainId: 31337n }), reader: () => reader } as unknown as AssetRegistry;
  return { assets, pending };
}

const expected = { domain: 'shop.example', uri: 'https://shop.example/dashboard', nonce: 'abcdef0123456789' };
const message = () =>
  new SiweMessage({
    domain: expected.domain, address: Wallet.createRandom().address, uri: expected.uri, version: '1', chainId: 31337,
    nonce: expected.nonce, issuedAt: new Date().toISOString(),
  }).prepareMessage();
// Not a signature of the message's address: the contract check decides.
const notRecovering = `0x${'11'.repeat(65)}`;

describe('SiweVerifier contract checks', () => {
  it(`runs at most ${MAX_CONTRACT_CHECKS} at once; one more is the chain being unavailable, and a place frees when one ends`, async () => {
    const { assets, pending } = registryWithPendingChecks();
    const verifier = new SiweVerifier(assets);
    const running = Array.from({ length: MAX_CONTRACT_CHECKS }, () => verifier.verify(message(), notRecovering, expected));
    await expect(verifier.verify(message(), notRecovering, expected)).rejects.toBeInstanceOf(SignatureCheckUnavailable);
    expect(pending).toHaveLength(MAX_CONTRACT_CHECKS);
    pending[0](false);
    await expect(running[0]).resolves.toMatchObject({ valid: false, field: 'signature' });
    const next = verifier.verify(message(), notRecovering, expected);
    await new Promise((r) => setImmediate(r));
    expect(pending).toHaveLength(MAX_CONTRACT_CHECKS + 1);
    for (const answer of pending.slice(1)) answer(true);
    await expect(next).resolves.toMatchObject({ valid: true, check: 'contract' });
    await Promise.all(running.slice(1));
  });
});
