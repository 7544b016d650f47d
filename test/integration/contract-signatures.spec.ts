import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbiCoder, Interface, JsonRpcProvider, Wallet, concat, hashMessage, toQuantity, zeroPadValue } from 'ethers';
import { loadArtifact } from '../../scripts/chain/compile-contracts';
import { deployContract, sendCall } from '../../scripts/chain/local-node';
import { EthersChainReader, SIGNATURE_CHECK_GAS } from '../../src/modules/chain/ethers-chain-reader';
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

  it('runs the check with a gas limit of its own: a factory that loops for ever is a bad signature, not the node\'s time', async () => {
    // The signer and an ERC-6492 factory are the caller's choice (an anonymous sign-in): without a limit the node
    // ran this loop up to its own cap, seconds per attempt (an abuse hunt).
    const node = new JsonRpcProvider(testEnv().rpcUrl);
    const [from] = (await node.send('eth_accounts', [])) as string[];
    // Creation code returning the runtime 5b600056: JUMPDEST PUSH1 0 JUMP, a loop until out of gas.
    const deployed = await node.waitForTransaction(await node.send('eth_sendTransaction', [{ from, data: '0x6004600c60003960046000f35b600056' }]));
    const loop = deployed!.contractAddress!;
    node.destroy();
    // The reader's eth_calls pass through a relay that keeps what they asked.
    const calls: Array<{ method: string; params: Array<Record<string, unknown>> }> = [];
    const relay = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', async () => {
        const parsed = JSON.parse(body);
        for (const c of Array.isArray(parsed) ? parsed : [parsed]) calls.push(c);
        const upstream = await fetch(testEnv().rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        res.setHeader('content-type', 'application/json');
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const relayed = new EthersChainReader(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`, 10_000);
    try {
      const looping = concat([AbiCoder.defaultAbiCoder().encode(['address', 'bytes', 'bytes'], [loop, '0x', `0x${'11'.repeat(65)}`]), SUFFIX]);
      expect(await relayed.isValidSignature(Wallet.createRandom().address, digest, looping)).toBe(false);
      const checks = calls.filter((c) => c.method === 'eth_call');
      expect(checks.length).toBeGreaterThan(0);
      for (const c of checks) expect(c.params[0].gas).toBe(toQuantity(SIGNATURE_CHECK_GAS));
      // A real wallet's check fits in it.
      const salt = zeroPadValue('0x04', 32);
      expect(await relayed.isValidSignature(await addressOf(salt), digest, wrap6492(salt, await owner.signMessage(message)))).toBe(true);
    } finally {
      relayed.destroy();
      await new Promise((r) => relay.close(r));
    }
  });

  it('rejects when the node cannot answer (so callers report the chain unavailable, not a bad signature)', async () => {
    const down = new EthersChainReader('http://127.0.0.1:9', 2000);
    await expect(down.isValidSignature(owner.address, digest, '0x')).rejects.toThrow();
    down.destroy();
  });

  it('rejects when the node answers the check with an error of its own, which ethers also calls CALL_EXCEPTION', async () => {
    // A node behind a load balancer that has not got the latest block, or is rate limiting: JSON-RPC errors that
    // are not about the call. They were read as a bad signature (a review), so a payer's proof got 401-like
    // invalid_signature instead of 503 chain_unavailable.
    const answers = [
      { code: -32000, message: 'header not found' },
      { code: -32005, message: 'request rate exceeded' },
      { code: -32603, message: 'Internal error' },
    ];
    let answer = answers[0];
    const relay = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', async () => {
        const parsed = JSON.parse(body) as { id: unknown; method: string };
        res.setHeader('content-type', 'application/json');
        if (parsed.method === 'eth_call') return res.end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id, error: answer }));
        const upstream = await fetch(testEnv().rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const relayed = new EthersChainReader(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`, 10_000);
    try {
      for (answer of answers) {
        await expect(relayed.isValidSignature(owner.address, digest, await owner.signMessage(message))).rejects.toThrow();
      }
      // Through the same relay, a revert is still an answer: not valid.
      answer = { code: -32603, message: 'Error: Transaction reverted without a reason string' };
      expect(await relayed.isValidSignature(owner.address, digest, await owner.signMessage(message))).toBe(false);
    } finally {
      relayed.destroy();
      await new Promise((r) => relay.close(r));
    }
  });
});
