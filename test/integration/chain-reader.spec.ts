import http from 'node:http';
import net from 'node:net';
import {
  DEV_ADDRESSES,
  DEV_KEYS,
  type LocalNode,
  deployToken,
  findFreePort,
  mine,
  mint,
  revert,
  sendTokenTransfer,
  setAutomine,
  snapshot,
  startLocalNode,
  transferToken,
} from '../../scripts/chain/local-node';
import { type ChainReader, NoTokenContract, TRANSFER_TOPIC, decodeTransferLog } from '../../src/modules/chain/chain-reader';
import { EthersChainReader } from '../../src/modules/chain/ethers-chain-reader';
import { LaggingRpc } from '../support/lagging-rpc';

const PAYER_KEY = DEV_KEYS[1];
const [, payer, merchant, other] = DEV_ADDRESSES;
const TIMEOUT_MS = 1_500;
const upper = (hex: string) => `0x${hex.slice(2).toUpperCase()}`;

let node: LocalNode;
let reader: EthersChainReader;
let usd: string;
let eur: string;

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  reader = new EthersChainReader(node.url, TIMEOUT_MS);
  // Deployed in parallel from one key on purpose: the helpers must not hand out the same nonce twice.
  [usd, eur] = await Promise.all([
    deployToken(node.url, { name: 'Test USD', symbol: 'TUSD' }),
    deployToken(node.url, { name: 'Test EUR', symbol: 'TEUR', decimals: 18 }),
  ]);
  await Promise.all([mint(node.url, usd, payer, 1_000_000_000n), mint(node.url, eur, payer, 10n ** 24n)]);
});

afterAll(async () => {
  reader?.destroy();
  await node?.stop();
});

describe('EthersChainReader on a local hardhat node', () => {
  it('reads the chain id and a tip that advances with each mined transfer', async () => {
    expect(await reader.chainId()).toBe(31337n);
    const before = await reader.tip();
    const { blockNumber } = await transferToken(node.url, usd, PAYER_KEY, merchant, 1n);
    expect(blockNumber).toBe(before + 1);
    expect(await reader.tip()).toBe(before + 1);
  });

  it('returns the receipt of a successful transfer with its Transfer log, and the block holding it', async () => {
    const { txHash, blockNumber } = await transferToken(node.url, usd, PAYER_KEY, merchant, 2_500_000n);
    const receipt = await reader.receipt(upper(txHash));
    expect(receipt).toMatchObject({ txHash, status: 1, blockNumber, from: payer, to: usd });
    expect(receipt!.logs).toHaveLength(1);
    const [log] = receipt!.logs;
    expect(log.topics[0]).toBe(TRANSFER_TOPIC);
    expect(decodeTransferLog(log)).toEqual({
      txHash,
      logIndex: log.logIndex,
      blockNumber,
      blockHash: receipt!.blockHash,
      token: usd,
      from: payer,
      to: merchant,
      value: 2_500_000n,
    });

    const byNumber = await reader.block(blockNumber);
    expect(byNumber).toEqual({ number: blockNumber, hash: receipt!.blockHash, timestamp: expect.any(Number) });
    expect(Math.abs(byNumber!.timestamp - Date.now() / 1000)).toBeLessThan(120);
    expect(await reader.block(receipt!.blockHash)).toEqual(byNumber);
  });

  it('returns null for an unknown transaction and for blocks that do not exist', async () => {
    expect(await reader.receipt(`0x${'12'.repeat(32)}`)).toBeNull();
    expect(await reader.block((await reader.tip()) + 1000)).toBeNull();
    expect(await reader.block(`0x${'34'.repeat(32)}`)).toBeNull();
  });

  it('rejects malformed hashes and block numbers without calling the node', async () => {
    await expect(reader.receipt('0x1234')).rejects.toThrow(TypeError);
    await expect(reader.block(-1)).rejects.toThrow(TypeError);
    await expect(reader.block('latest')).rejects.toThrow(TypeError);
  });

  it('reports a mined but reverted transfer with status 0 and no logs', async () => {
    // A manual gas limit skips estimation, which would refuse to send a transfer that reverts.
    const txHash = await sendTokenTransfer(node.url, usd, PAYER_KEY, merchant, 10n ** 30n, { gasLimit: 100_000n });
    const receipt = await reader.receipt(txHash);
    expect(receipt).toMatchObject({ txHash, status: 0, from: payer, to: usd, logs: [] });
  });

  it('lists transfers filtered by token, recipients and block range', async () => {
    const fromBlock = (await reader.tip()) + 1;
    const toMerchant = await transferToken(node.url, usd, PAYER_KEY, merchant, 100n);
    const toOther = await transferToken(node.url, usd, PAYER_KEY, other, 200n);
    const eurToMerchant = await transferToken(node.url, eur, PAYER_KEY, merchant, 300n);
    const toBlock = await reader.tip();

    const usdToMerchant = await reader.transfers({ token: usd, to: [merchant], fromBlock, toBlock });
    expect(usdToMerchant).toEqual([
      expect.objectContaining({ txHash: toMerchant.txHash, token: usd, from: payer, to: merchant, value: 100n }),
    ]);

    const usdToBoth = await reader.transfers({ token: upper(usd), to: [other, merchant], fromBlock, toBlock });
    expect(usdToBoth.map((t) => [t.txHash, t.to, t.value])).toEqual([
      [toMerchant.txHash, merchant, 100n],
      [toOther.txHash, other, 200n],
    ]);

    const eurTransfers = await reader.transfers({ token: eur, to: [merchant], fromBlock, toBlock });
    expect(eurTransfers.map((t) => [t.txHash, t.token, t.value])).toEqual([[eurToMerchant.txHash, eur, 300n]]);

    const laterOnly = await reader.transfers({
      token: usd,
      to: [merchant, other],
      fromBlock: toOther.blockNumber,
      toBlock,
    });
    expect(laterOnly.map((t) => t.txHash)).toEqual([toOther.txHash]);

    expect(await reader.transfers({ token: usd, to: [], fromBlock, toBlock })).toEqual([]);
    const future = { token: usd, to: [merchant], fromBlock: toBlock + 1, toBlock: toBlock + 5 };
    expect(await reader.transfers(future)).toEqual([]);
  });

  it('lists the transfers of one block by its hash, and refuses a hash the node does not have (EIP-234)', async () => {
    const toMerchant = await transferToken(node.url, usd, PAYER_KEY, merchant, 400n);
    await transferToken(node.url, usd, PAYER_KEY, merchant, 500n); // another block
    const block = (await reader.block(toMerchant.blockNumber))!;
    const inBlock = await reader.transfers({ token: usd, to: [merchant, other], blockHash: block.hash });
    expect(inBlock.map((t) => [t.txHash, t.blockHash, t.value])).toEqual([[toMerchant.txHash, block.hash, 400n]]);
    // A node that answered an unknown block with no logs would let the chain scan pass that block's payments.
    await expect(reader.transfers({ token: usd, to: [merchant], blockHash: `0x${'ab'.repeat(32)}` })).rejects.toThrow();
  });

  it('keeps parallel transfers from one key apart (explicit nonces)', async () => {
    const results = await Promise.all(
      [1n, 2n, 3n, 4n, 5n].map((value) => transferToken(node.url, usd, PAYER_KEY, other, value)),
    );
    expect(new Set(results.map((r) => r.txHash)).size).toBe(5);
    for (const { txHash } of results) expect((await reader.receipt(txHash))?.status).toBe(1);
  });

  it('reads decimals and symbol of a token', async () => {
    expect(await reader.tokenInfo(usd)).toEqual({ decimals: 6, symbol: 'TUSD' });
    expect(await reader.tokenInfo(eur)).toEqual({ decimals: 18, symbol: 'TEUR' });
    await expect(reader.tokenInfo(merchant)).rejects.toThrow(new NoTokenContract(merchant.toLowerCase()));
  });

  // Readiness and the log tell these from "RPC unreachable": the node answered, the address is wrong.
  it.each([
    ['reverts in decimals()', '0x60006000fd', /decimals\(\) reverted/],
    ['returns nothing', '0x00', /did not answer decimals\(\)/],
    ['returns 2^256-1 decimals', `0x7f${'ff'.repeat(32)}60005260206000f3`, /reports \d+ decimals/],
  ])('a contract that is not an ERC-20 (%s) is a NoTokenContract saying why', async (_name, code, why) => {
    const address = `0x${'c0de'.repeat(9)}${String(code.length).padStart(4, '0')}`;
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'hardhat_setCode', params: [address, code] }),
    });
    expect(((await res.json()) as { error?: unknown }).error).toBeUndefined();
    const e = await reader.tokenInfo(address).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NoTokenContract);
    expect((e as NoTokenContract).why).toMatch(why);
  });

  // decimals() and symbol() are asked at once; the reason given must not depend on which answer came back first.
  it('names decimals() when both reverts come back, even when symbol() answered first', async () => {
    const address = `0x${'c0de'.repeat(9)}beef`;
    const set = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'hardhat_setCode', params: [address, '0x60006000fd'] }),
    });
    expect(((await set.json()) as { error?: unknown }).error).toBeUndefined();
    const rpc = new LaggingRpc(node.url);
    await rpc.start();
    try {
      rpc.slowCallOf('0x313ce567', 300); // decimals()
      const e = await new EthersChainReader(rpc.url, TIMEOUT_MS).tokenInfo(address).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NoTokenContract);
      expect((e as NoTokenContract).why).toBe('decimals() reverted');
    } finally {
      await rpc.stop();
    }
  });

  it('sees a pending transfer only once it is mined', async () => {
    await setAutomine(node.url, false);
    try {
      const tip = await reader.tip();
      const txHash = await sendTokenTransfer(node.url, usd, PAYER_KEY, merchant, 7n);
      expect(await reader.receipt(txHash)).toBeNull();
      // Known to the node while pending: transaction() tells it apart from a hash nobody ever sent.
      expect(await reader.transaction(txHash)).toEqual({ hash: txHash, blockNumber: null });
      expect(await reader.transaction(`0x${'5a'.repeat(32)}`)).toBeNull();
      expect(await reader.tip()).toBe(tip);
      await mine(node.url);
      expect(await reader.receipt(txHash)).toMatchObject({ status: 1, blockNumber: tip + 1 });
      expect(await reader.transaction(txHash)).toEqual({ hash: txHash, blockNumber: tip + 1 });
    } finally {
      await setAutomine(node.url, true);
    }
  });

  it('forgets a transfer that a reorg removed', async () => {
    const snap = await snapshot(node.url);
    const reorged = await transferToken(node.url, usd, PAYER_KEY, merchant, 4_242n);
    const orphanedBlock = await reader.block(reorged.blockNumber);
    expect((await reader.receipt(reorged.txHash))?.status).toBe(1);

    await revert(node.url, snap);
    // The competing branch: another transaction at the same height, then a longer chain.
    const replacement = await transferToken(node.url, usd, PAYER_KEY, other, 1n);
    await mine(node.url, 3);

    expect(replacement.blockNumber).toBe(reorged.blockNumber);
    expect(await reader.receipt(reorged.txHash)).toBeNull();
    const canonical = await reader.block(reorged.blockNumber);
    expect(canonical!.hash).not.toBe(orphanedBlock!.hash);
    expect(await reader.block(orphanedBlock!.hash)).toBeNull();
    expect(await reader.tip()).toBe(reorged.blockNumber + 3);
    const seen = await reader.transfers({
      token: usd,
      to: [merchant],
      fromBlock: reorged.blockNumber,
      toBlock: reorged.blockNumber + 3,
    });
    expect(seen).toEqual([]);
  });
});

/**
 * A JSON-RPC endpoint answering eth_chainId and eth_blockNumber that drops the socket of a request `drop`
 * picks, without an answer: as a node closing an idle kept-alive socket does when the client's next request
 * crosses it. `reused`: the socket has carried an answer before.
 */
async function droppingRpc(drop: (method: string, reused: boolean) => boolean) {
  const served = new WeakSet<net.Socket>();
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      seen.push(method);
      if (drop(method, served.has(req.socket))) {
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: method === 'eth_chainId' ? '0x7a69' : '0x2a' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('EthersChainReader and kept-alive sockets the node drops', () => {
  it('sends a read again once when the node dropped the reused socket before answering ("socket hang up")', async () => {
    let dropped = 0;
    const rpc = await droppingRpc((method, reused) => method === 'eth_blockNumber' && reused && dropped++ === 0);
    const r = new EthersChainReader(rpc.url, TIMEOUT_MS);
    try {
      expect(await r.chainId()).toBe(31337n);
      expect(await r.tip()).toBe(42);
      expect(dropped).toBe(1);
      // The connect's eth_chainId, chainId()'s own, then tip()'s eth_blockNumber on the kept-alive socket
      // (dropped) and again on a fresh one.
      expect(rpc.seen).toEqual(['eth_chainId', 'eth_chainId', 'eth_blockNumber', 'eth_blockNumber']);
    } finally {
      r.destroy();
      await rpc.close();
    }
  });

  it('only once: a read whose socket is dropped twice is an error', async () => {
    const rpc = await droppingRpc((method) => method === 'eth_blockNumber');
    const r = new EthersChainReader(rpc.url, TIMEOUT_MS);
    try {
      await expect(r.tip()).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(rpc.seen).toEqual(['eth_chainId', 'eth_blockNumber', 'eth_blockNumber']);
    } finally {
      r.destroy();
      await rpc.close();
    }
  });
});

describe('EthersChainReader when the node is unavailable', () => {
  const calls = (r: ChainReader): [string, () => Promise<unknown>][] => [
    ['chainId', () => r.chainId()],
    ['tip', () => r.tip()],
    ['block', () => r.block(1)],
    ['receipt', () => r.receipt(`0x${'ab'.repeat(32)}`)],
    ['transfers', () => r.transfers({ token: usd, to: [merchant], fromBlock: 0, toBlock: 10 })],
    ['tokenInfo', () => r.tokenInfo(usd)],
  ];

  async function expectAllRejectInTime(r: ChainReader): Promise<void> {
    const outcomes = await Promise.all(
      calls(r).map(async ([name, call]) => {
        const started = Date.now();
        const rejected = await call().then(
          () => false,
          () => true,
        );
        return { name, rejected, elapsedMs: Date.now() - started };
      }),
    );
    for (const outcome of outcomes) {
      expect(outcome).toEqual({ name: outcome.name, rejected: true, elapsedMs: expect.any(Number) });
      // A little slack over the reader's own timeout for timers and the event loop.
      expect(outcome.elapsedMs).toBeLessThan(TIMEOUT_MS + 500);
    }
  }

  it('rejects within the timeout when the RPC accepts connections but never answers', async () => {
    const sockets = new Set<net.Socket>();
    const blackHole = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const { port } = blackHole.address() as net.AddressInfo;
    const silent = new EthersChainReader(`http://127.0.0.1:${port}`, TIMEOUT_MS);
    try {
      await expectAllRejectInTime(silent);
    } finally {
      silent.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => blackHole.close(() => resolve()));
    }
  });

  it('rejects within the timeout once the node is stopped, for a connected and for a fresh reader', async () => {
    await node.stop();
    await expectAllRejectInTime(reader);
    const fresh = new EthersChainReader(node.url, TIMEOUT_MS);
    try {
      await expectAllRejectInTime(fresh);
    } finally {
      fresh.destroy();
    }
  });
});
