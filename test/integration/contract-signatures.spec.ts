import { AbiCoder, Interface, Wallet, concat, hashMessage, zeroPadValue } from 'ethers';
import { loadArtifact } from '../../scripts/chain/compile-contracts';
import { deployContract, sendCall } from '../../scripts/chain/local-node';
import { EthersChainReader } from '../../src/modules/chain/ethers-chain-reader';
import { testEnv } from '../support/test-env';

/**
 * Contract-wallet signatures on the run's real Hardhat node: a deployed ERC-1271 wallet (a one-owner Safe
 * behaves the same for signatures) and an ERC-6492 wallet that does not exist yet.
 */
describe('contract wallet signatures (ERC-1271, ERC-6492)', () => {
  // Signers need no funds: only the deployer (a dev key) sends transactions.
  const owner = Wallet.createRandom();
  const stranger = Wallet.createRandom();
  const message = 'example.com wants you to sign in with your Ethereum account';
  const digest = hashMessage(message);
  const factoryAbi = new Interface(loadArtifact('TestSmartWallet.sol', 'TestWalletFactory').abi);
  const SUFFIX = '0x' + '6492'.repeat(16);
  let reader: EthersChainReader;
  let factory: string;

  const addressOf = async (salt: string) => {
    const data = factoryAbi.encodeFunctionData('addressOf', [owner.address, salt]);
    const res = await fetch(testEnv().rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: factory, data }, 'latest'] }),
    });
    return `0x${((await res.json()) as { result: string }).result.slice(26)}`;
  };
  const wrap6492 = (salt: string, inner: string) =>
    concat([
      AbiCoder.defaultAbiCoder().encode(['address', 'bytes', 'bytes'], [factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]), inner]),
      SUFFIX,
    ]);

  beforeAll(async () => {
    reader = new EthersChainReader(testEnv().rpcUrl, 10_000);
    factory = await deployContract(testEnv().rpcUrl, 'TestSmartWallet.sol', 'TestWalletFactory');
  });
  afterAll(() => reader.destroy());

  it('accepts the owner signing for a deployed ERC-1271 wallet, and nobody else', async () => {
    const salt = zeroPadValue('0x01', 32);
    const wallet = await addressOf(salt);
    await sendCall(testEnv().rpcUrl, factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]));
    expect(await reader.isValidSignature(wallet, digest, await owner.signMessage(message))).toBe(true);
    expect(await reader.isValidSignature(wallet, digest, await stranger.signMessage(message))).toBe(false);
    expect(await reader.isValidSignature(wallet, hashMessage('another message'), await owner.signMessage(message))).toBe(false);
  });

  it('accepts an ERC-6492 signature of a wallet not deployed yet, and leaves it undeployed', async () => {
    const salt = zeroPadValue('0x02', 32);
    const wallet = await addressOf(salt);
    expect(await reader.isValidSignature(wallet, digest, wrap6492(salt, await owner.signMessage(message)))).toBe(true);
    expect(await reader.isValidSignature(wallet, digest, wrap6492(salt, await stranger.signMessage(message)))).toBe(false);
    // Deployed only inside the eth_call: the chain has no code there afterwards.
    const code = await fetch(testEnv().rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getCode', params: [wallet, 'latest'] }),
    });
    expect(((await code.json()) as { result: string }).result).toBe('0x');
  });

  it('answers false, not an error, for malformed signatures and for an account with no code', async () => {
    const salt = zeroPadValue('0x03', 32);
    const wallet = await addressOf(salt);
    expect(await reader.isValidSignature(wallet, digest, '0x1234')).toBe(false);
    expect(await reader.isValidSignature(wallet, digest, 'not hex')).toBe(false);
    expect(await reader.isValidSignature(stranger.address, digest, await owner.signMessage(message))).toBe(false);
    // A plain account's own signature passes the validator's ecrecover path too.
    expect(await reader.isValidSignature(owner.address, digest, await owner.signMessage(message))).toBe(true);
  });

  it('rejects when the node cannot answer (so callers report the chain unavailable, not a bad signature)', async () => {
    const down = new EthersChainReader('http://127.0.0.1:9', 2000);
    await expect(down.isValidSignature(owner.address, digest, '0x')).rejects.toThrow();
    down.destroy();
  });
});
