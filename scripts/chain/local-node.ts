import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import {
  ContractFactory,
  FetchRequest,
  Interface,
  JsonRpcProvider,
  Network,
  type TransactionRequest,
  Wallet,
  toQuantity,
} from 'ethers';
import { loadArtifact, loadTokenArtifact } from './compile-contracts';

const ROOT = path.resolve(__dirname, '..', '..');
const HARDHAT_CLI = path.join(ROOT, 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
const HARDHAT_CONFIG = path.join(ROOT, 'hardhat.config.js');
const READY_BANNER = 'Started HTTP and WebSocket JSON-RPC server at';
const OUTPUT_TAIL_CHARS = 16_000;

/** Private keys of Hardhat's default accounts 0..4 (mnemonic "test test ... junk"). Public knowledge: test use only. */
export const DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
] as const;

/** Lowercased addresses of DEV_KEYS, same order. */
export const DEV_ADDRESSES: readonly string[] = DEV_KEYS.map((key) => new Wallet(key).address.toLowerCase());

/** A running `hardhat node`. Like any child process, it keeps the parent's event loop alive until stopped. */
export interface LocalNode {
  url: string;
  pid: number;
  /** Kills the node and resolves once the process has exited. Safe to call more than once. */
  stop(): Promise<void>;
}

export interface StartLocalNodeOptions {
  port: number;
  host?: string;
  /** Bound on the whole start-up, default 30 s. */
  timeoutMs?: number;
  /** Receives the node's stdout and stderr (it logs every RPC call); by default only a tail is kept for errors. */
  onOutput?: (chunk: string) => void;
  /** The node's chain id, default 31337 (hardhat.config.js). */
  chainId?: number;
}

const liveNodes = new Set<ChildProcess>();

// Only synchronous work is possible in 'exit'. Deaths that skip it (SIGKILL, an unhandled SIGTERM) are covered
// by the IPC watchdog in the child, see startLocalNode. The listener lives only while a node does, so test files
// that each start a node do not pile up listeners on the shared process.
function killLiveNodes(): void {
  for (const child of liveNodes) child.kill('SIGKILL');
}

function track(child: ChildProcess): void {
  liveNodes.add(child);
  if (liveNodes.size === 1) process.on('exit', killLiveNodes);
}

function untrack(child: ChildProcess): void {
  if (liveNodes.delete(child) && liveNodes.size === 0) process.off('exit', killLiveNodes);
}

/** Starts `hardhat node` (chainId 31337, automine) on host:port and resolves once it answers eth_chainId. */
export async function startLocalNode(options: StartLocalNodeOptions): Promise<LocalNode> {
  const { port, host = '127.0.0.1', timeoutMs = 30_000, onOutput, chainId } = options;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const child = spawn(
    process.execPath,
    [
      // The parent owns an IPC channel to the child; when the parent dies in any way, the channel closes and
      // this preload makes the node exit, so no orphan keeps the port.
      `--import=data:text/javascript,process.on('disconnect',()=>process.exit(0))`,
      HARDHAT_CLI,
      '--config',
      HARDHAT_CONFIG,
      'node',
      '--hostname',
      host,
      '--port',
      String(port),
    ],
    {
      cwd: ROOT,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', ...(chainId ? { PRS_HARDHAT_CHAIN_ID: String(chainId) } : {}) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  track(child);

  let output = '';
  let bannerSeen = false;
  let exitInfo: string | null = null;
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    onOutput?.(text);
    if (!bannerSeen && (output + text).includes(READY_BANNER)) bannerSeen = true;
    output = (output + text).slice(-OUTPUT_TAIL_CHARS);
  };
  // Both pipes must be drained for the node's whole life: it logs every request, and a full pipe blocks it.
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `code ${code}`;
      untrack(child);
      resolve();
    });
    // 'error' without 'exit' means the process could not be spawned at all.
    child.on('error', (error) => {
      exitInfo ??= `spawn error: ${error.message}`;
      untrack(child);
      resolve();
    });
  });

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (exitInfo !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };

  const startedAt = Date.now();
  const failure = (why: string) =>
    new Error(
      `hardhat node on ${url} ${why} after ${Date.now() - startedAt} ms. Output:\n${output.trim() || '(none)'}`,
    );
  try {
    for (;;) {
      if (exitInfo !== null) throw failure(`exited (${exitInfo})`);
      if (Date.now() - startedAt > timeoutMs) throw failure('did not answer eth_chainId');
      // The banner proves that our child is the one listening: another node on a taken port would answer too.
      if (bannerSeen && (await answersChainId(url))) break;
      await Promise.race([sleep(100), exited]);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, pid: child.pid!, stop };
}

async function answersChainId(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(2_000),
    });
    const body = (await response.json()) as { result?: string };
    return typeof body.result === 'string';
  } catch {
    return false;
  }
}

/**
 * Ports findFreePort picks from: below Linux's ephemeral range (32768-60999), which the OS hands out to every
 * listen(0) and outgoing connection. A port taken from that range could be handed to another process (another
 * jest worker's service on port 0, an HTTP client's socket) between this check and its use.
 */
const PICK_FROM = 20_000;
const PICK_TO = 32_767;
const handedOut = new Set<number>();

/**
 * A TCP port that was free a moment ago, chosen at random outside the ephemeral range. Another process could
 * still take it before use, but only by picking the same one.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  for (let tries = 0; ; tries++) {
    const port = PICK_FROM + Math.floor(Math.random() * (PICK_TO - PICK_FROM + 1));
    // Never the same port twice in one process: two calls before either port is bound would both find it free.
    if (!handedOut.has(port) && (await isFree(port, host))) {
      handedOut.add(port);
      return port;
    }
    if (tries >= 100) throw new Error(`no free port between ${PICK_FROM} and ${PICK_TO} on ${host} after 100 tries`);
  }
}

async function isFree(port: number, host: string): Promise<boolean> {
  const server = net.createServer();
  try {
    server.listen(port, host);
    await once(server, 'listening');
  } catch {
    return false;
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Token and chain helpers. Each call opens its own provider and destroys it, so nothing lingers after a test.

const erc20 = new Interface([
  'function mint(address to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
]);

/**
 * A fresh socket per request: Node's global agent keeps sockets 5 s, Hardhat closes idle ones after 5 s, and a
 * send crossing that close fails with "socket hang up" (once under CI load). A send cannot simply be retried
 * (it may have reached the node), and local connections cost nothing.
 */
const freshSocketEach = FetchRequest.createGetUrlFunc({ agent: new http.Agent({ keepAlive: false }) });

async function withProvider<T>(url: string, fn: (provider: JsonRpcProvider) => Promise<T>): Promise<T> {
  const request = new FetchRequest(url);
  if (url.startsWith('http:')) request.getUrlFunc = freshSocketEach; // an http.Agent cannot carry https
  request.timeout = 30_000;
  const chainId = BigInt(await rawRpc<string>(request, 'eth_chainId', []));
  const network = Network.from(chainId);
  const provider = new JsonRpcProvider(request, network, { staticNetwork: network, cacheTimeout: -1 });
  try {
    return await fn(provider);
  } finally {
    provider.destroy();
  }
}

async function rawRpc<T>(request: FetchRequest, method: string, params: unknown[]): Promise<T> {
  const req = request.clone();
  req.body = { jsonrpc: '2.0', id: 1, method, params };
  const response = await req.send();
  response.assertOk();
  const body = response.bodyJson as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method} failed: ${body.error.message}`);
  return body.result as T;
}

/** One JSON-RPC call on the node (tests: `evm_setNextBlockTimestamp`, `eth_blockNumber`, …). */
export async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  return withProvider(url, (provider) => provider.send(method, params) as Promise<T>);
}

// Sends from one key are serialised per node, and the nonce is re-read from the node's pending state inside the
// lock: parallel sends cannot pick the same nonce, and evm_revert (which rewinds nonces) cannot desync a counter.
const sendQueues = new Map<string, Promise<unknown>>();

async function sendSerialised(
  provider: JsonRpcProvider,
  url: string,
  privateKey: string,
  tx: TransactionRequest,
): Promise<string> {
  const wallet = new Wallet(privateKey, provider);
  const key = `${url}|${wallet.address.toLowerCase()}`;
  const previous = sendQueues.get(key) ?? Promise.resolve();
  const send = previous.then(async () => {
    const nonce = await provider.getTransactionCount(wallet.address, 'pending');
    const sent = await wallet.sendTransaction({ ...tx, nonce });
    return sent.hash.toLowerCase();
  });
  const tail = send.catch(() => undefined);
  sendQueues.set(key, tail);
  try {
    return await send;
  } finally {
    if (sendQueues.get(key) === tail) sendQueues.delete(key);
  }
}

interface MinedTx {
  txHash: string;
  blockNumber: number;
}

/** Waits for the receipt (a mined block, so automine must be on or someone must mine) and requires status 1. */
async function waitMined(provider: JsonRpcProvider, txHash: string, timeoutMs = 30_000): Promise<MinedTx> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const receipt = await provider.getTransactionReceipt(txHash);
    if (receipt) {
      if (receipt.status !== 1) throw new Error(`transaction ${txHash} reverted (block ${receipt.blockNumber})`);
      return { txHash, blockNumber: receipt.blockNumber };
    }
    if (Date.now() > deadline) throw new Error(`transaction ${txHash} not mined within ${timeoutMs} ms`);
    await sleep(25);
  }
}

export interface DeployTokenOptions {
  name: string;
  symbol: string;
  /** Default 6. */
  decimals?: number;
  /** Default DEV_KEYS[0]. */
  deployerKey?: string;
}

/** Deploys contracts/TestToken.sol and returns its lowercased address. Needs automine (the default). */
export async function deployToken(url: string, options: DeployTokenOptions): Promise<string> {
  const { name, symbol, decimals = 6, deployerKey = DEV_KEYS[0] } = options;
  const { abi, bytecode } = loadTokenArtifact();
  const factory = new ContractFactory(abi, bytecode);
  const deployTx = await factory.getDeployTransaction(name, symbol, decimals);
  return withProvider(url, async (provider) => {
    const hash = await sendSerialised(provider, url, deployerKey, deployTx);
    await waitMined(provider, hash);
    const receipt = await provider.getTransactionReceipt(hash);
    return receipt!.contractAddress!.toLowerCase();
  });
}

/** Deploys contract `name` of contracts/<file> with constructor `args`; returns its lowercased address. Needs automine. */
export async function deployContract(url: string, file: string, name: string, args: unknown[] = [], deployerKey: string = DEV_KEYS[0]): Promise<string> {
  const { abi, bytecode } = loadArtifact(file, name);
  const deployTx = await new ContractFactory(abi, bytecode).getDeployTransaction(...args);
  return withProvider(url, async (provider) => {
    const hash = await sendSerialised(provider, url, deployerKey, deployTx);
    await waitMined(provider, hash);
    const receipt = await provider.getTransactionReceipt(hash);
    return receipt!.contractAddress!.toLowerCase();
  });
}

/** Sends `data` to contract `to` from `senderKey` and waits for it to be mined. Needs automine. */
export async function sendCall(url: string, to: string, data: string, senderKey: string = DEV_KEYS[0]): Promise<MinedTx> {
  return withProvider(url, async (provider) => waitMined(provider, await sendSerialised(provider, url, senderKey, { to, data })));
}

/** Mints `amount` base units of `token` to `to` (anyone may mint the test token). Needs automine. */
export async function mint(
  url: string,
  token: string,
  to: string,
  amount: bigint,
  minterKey: string = DEV_KEYS[0],
): Promise<MinedTx> {
  const data = erc20.encodeFunctionData('mint', [to, amount]);
  return withProvider(url, async (provider) => {
    const hash = await sendSerialised(provider, url, minterKey, { to: token, data });
    return waitMined(provider, hash);
  });
}

export interface SendOptions {
  /** Skips gas estimation, so a transfer that will revert is still sent (and mined with status 0). */
  gasLimit?: bigint;
}

/**
 * Sends an ERC-20 transfer and returns its hash as soon as the node accepted it, without waiting for a block.
 * With automine off (setAutomine(url, false)) it stays pending until mine(); with automine on it is already mined.
 */
export async function sendTokenTransfer(
  url: string,
  token: string,
  fromPrivateKey: string,
  to: string,
  amount: bigint,
  options: SendOptions = {},
): Promise<string> {
  const data = erc20.encodeFunctionData('transfer', [to, amount]);
  return withProvider(url, (provider) =>
    sendSerialised(provider, url, fromPrivateKey, { to: token, data, gasLimit: options.gasLimit }),
  );
}

/**
 * An ERC-20 transfer signed with the sender's next nonce but not sent: `broadcast` sends it, and can send it
 * again after a reorg (evm_revert) dropped it, as a node re-including it would.
 */
export async function signTokenTransfer(url: string, token: string, fromPrivateKey: string, to: string, amount: bigint): Promise<string> {
  const data = erc20.encodeFunctionData('transfer', [to, amount]);
  return withProvider(url, async (provider) => {
    const wallet = new Wallet(fromPrivateKey, provider);
    return wallet.signTransaction(await wallet.populateTransaction({ to: token, data, gasLimit: 100_000n }));
  });
}

/** Sends a signed transaction; resolves with its hash once the node accepted it. */
export async function broadcast(url: string, signed: string): Promise<string> {
  return (await rpc<string>(url, 'eth_sendRawTransaction', [signed])).toLowerCase();
}

/** Sends an ERC-20 transfer and waits until it is mined with status 1 (needs automine, the default). */
export async function transferToken(
  url: string,
  token: string,
  fromPrivateKey: string,
  to: string,
  amount: bigint,
): Promise<MinedTx> {
  const hash = await sendTokenTransfer(url, token, fromPrivateKey, to, amount);
  return withProvider(url, (provider) => waitMined(provider, hash));
}

export async function balanceOf(url: string, token: string, owner: string): Promise<bigint> {
  const data = erc20.encodeFunctionData('balanceOf', [owner]);
  const result = await rpc<string>(url, 'eth_call', [{ to: token, data }, 'latest']);
  return BigInt(result);
}

/** With automine off, sent transactions wait in the mempool until mine(). */
export async function setAutomine(url: string, enabled: boolean): Promise<void> {
  await rpc(url, 'evm_setAutomine', [enabled]);
}

/** Runs `fn` with automine off: transactions sent meanwhile stay pending until mined. Automine is back on after. */
export async function withPending<T>(url: string, fn: () => Promise<T>): Promise<T> {
  await setAutomine(url, false);
  try {
    return await fn();
  } finally {
    await setAutomine(url, true);
  }
}

/** Mines `blocks` blocks (pending transactions go into the first one). */
export async function mine(url: string, blocks = 1): Promise<void> {
  await rpc(url, 'hardhat_mine', [toQuantity(blocks)]);
}

/** Snapshot of the whole chain state (blocks, balances, nonces, mempool). Hardhat snapshots are single-use. */
export async function snapshot(url: string): Promise<string> {
  return rpc<string>(url, 'evm_snapshot');
}

/** Rewinds to a snapshot, dropping every block after it: mining afterwards produces a reorg. Consumes the id. */
export async function revert(url: string, snapshotId: string): Promise<void> {
  const ok = await rpc<boolean>(url, 'evm_revert', [snapshotId]);
  if (!ok) throw new Error(`evm_revert(${snapshotId}) failed: unknown or already used snapshot`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
