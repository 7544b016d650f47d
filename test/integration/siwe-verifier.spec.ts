import { AbiCoder, Interface, Wallet, concat, zeroPadValue } from 'ethers';
import { SiweMessage } from 'siwe';
import { loadArtifact } from '../../scripts/chain/compile-contracts';
import { deployContract, sendCall } from '../../scripts/chain/local-node';
import type { AssetRegistry } from '../../src/modules/chain/asset-registry';
import { EthersChainReader } from '../../src/modules/chain/ethers-chain-reader';
import { SignatureCheckUnavailable, SiweVerifier } from '../../src/modules/chain/siwe-verifier.service';
import { testEnv } from '../support/test-env';

/** Sign-In with Ethereum for plain accounts, ERC-1271 and ERC-6492 wallets, on the run's Hardhat node. */
describe('SiweVerifier', () => {
  const expected = { domain: 'pay.example:3000', uri: 'http://pay.example:3000/dashboard', nonce: 'abcdef123456' };
  const owner = Wallet.createRandom();
  const factoryAbi = new Interface(loadArtifact('TestSmartWallet.sol', 'TestWalletFactory').abi);
  let factory: string;
  let reader: EthersChainReader;

  /** The registry as the verifier sees it: one configured mode on the local chain (31337), over `r`. */
  const registry = (r: EthersChainReader) =>
    ({ asset: (m: string) => (m === 'test' ? { chainId: 31337n } : null), reader: (m: string) => (m === 'test' ? r : null) }) as unknown as AssetRegistry;

  const message = (address: string, over: Partial<SiweMessage> = {}) =>
    new SiweMessage({
      domain: expected.domain, address, uri: expected.uri, nonce: expected.nonce, version: '1', chainId: 31337,
      statement: 'Sign in to your dashboard.', issuedAt: new Date().toISOString(), ...over,
    }).prepareMessage();

  const walletAt = async (salt: string) => {
    const res = await fetch(testEnv().rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: factory, data: factoryAbi.encodeFunctionData('addressOf', [owner.address, salt]) }, 'latest'] }),
    });
    // A checksummed address, as a wallet puts it into the message.
    return new Interface(['function f() view returns (address)']).decodeFunctionResult('f', ((await res.json()) as { result: string }).result)[0] as string;
  };

  beforeAll(async () => {
    reader = new EthersChainReader(testEnv().rpcUrl, 5000);
    factory = await deployContract(testEnv().rpcUrl, 'TestSmartWallet.sol', 'TestWalletFactory');
  });
  afterAll(() => reader.destroy());

  it('accepts a plain account and returns its lower-cased address and chain', async () => {
    const msg = message(owner.address);
    expect(await new SiweVerifier(registry(reader)).verify(msg, await owner.signMessage(msg), expected)).toEqual({
      valid: true, address: owner.address.toLowerCase(), chainId: 31337, check: 'ecdsa',
    });
  });

  it.each([
    ['another domain', { domain: 'evil.example' }],
    ['another uri', { uri: 'http://pay.example:3000/elsewhere' }],
    ['another nonce', { nonce: 'zzzzzzzzzzzz' }],
    ['an expired message', { expirationTime: new Date(Date.now() - 1000).toISOString() }],
    ['a message not valid yet', { notBefore: new Date(Date.now() + 60_000).toISOString() }],
  ])('refuses %s', async (_, over) => {
    const msg = message(owner.address, over as Partial<SiweMessage>);
    const verdict = await new SiweVerifier(registry(reader)).verify(msg, await owner.signMessage(msg), expected);
    expect(verdict).toMatchObject({ valid: false, field: 'message' });
  });

  it('refuses text that is not EIP-4361, and a signature by someone else', async () => {
    const v = new SiweVerifier(registry(reader));
    expect(await v.verify('hello', '0x', expected)).toMatchObject({ valid: false, field: 'message' });
    const msg = message(owner.address);
    expect(await v.verify(msg, await Wallet.createRandom().signMessage(msg), expected)).toMatchObject({ valid: false, field: 'signature' });
  });

  it('accepts a deployed ERC-1271 wallet signed by its owner', async () => {
    const salt = zeroPadValue('0x11', 32);
    const wallet = await walletAt(salt);
    await sendCall(testEnv().rpcUrl, factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]));
    const msg = message(wallet);
    expect(await new SiweVerifier(registry(reader)).verify(msg, await owner.signMessage(msg), expected)).toEqual({
      valid: true, address: wallet.toLowerCase(), chainId: 31337, check: 'contract',
    });
  });

  it('accepts an ERC-6492 signature of a smart wallet not deployed yet', async () => {
    const salt = zeroPadValue('0x12', 32);
    const wallet = await walletAt(salt);
    const msg = message(wallet);
    const signature = concat([
      AbiCoder.defaultAbiCoder().encode(['address', 'bytes', 'bytes'], [factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]), await owner.signMessage(msg)]),
      '0x' + '6492'.repeat(16),
    ]);
    expect(await new SiweVerifier(registry(reader)).verify(msg, signature, expected)).toMatchObject({ valid: true, address: wallet.toLowerCase(), check: 'contract', chainId: 31337 });
  });

  it('refuses a contract signature for a chain that is not configured', async () => {
    const msg = message(await walletAt(zeroPadValue('0x13', 32)), { chainId: 1 });
    expect(await new SiweVerifier(registry(reader)).verify(msg, await owner.signMessage(msg), expected)).toMatchObject({ valid: false, field: 'signature' });
  });

  it('throws SignatureCheckUnavailable (not a bad signature) when the chain cannot answer', async () => {
    const down = new EthersChainReader('http://127.0.0.1:9', 1000);
    const msg = message(await walletAt(zeroPadValue('0x14', 32)));
    await expect(new SiweVerifier(registry(down)).verify(msg, await owner.signMessage(msg), expected)).rejects.toBeInstanceOf(SignatureCheckUnavailable);
    down.destroy();
  });
});
