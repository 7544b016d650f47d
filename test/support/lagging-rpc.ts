import { createServer, type Server } from 'node:http';
import { Wallet } from 'ethers';
import { deployToken, findFreePort, mint, startLocalNode, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from './app';
import { closeSql } from './db';

interface RpcRequest {
  jsonrpc: '2.0';
  id: unknown;
  method: string;
  params?: unknown[];
}

interface RpcResponse {
  jsonrpc: '2.0';
  id: unknown;
  result?: unknown;
  error?: unknown;
}

const quantity = (n: number) => `0x${n.toString(16)}`;
const numberOf = (hex: unknown) => (typeof hex === 'string' ? Number(hex) : NaN);

/**
 * A JSON-RPC endpoint in front of a real node that can answer like a load balancer's backend that is `lag`
 * blocks behind: its tip is lower, and blocks, receipts and logs above that tip are unknown to it. Every
 * other call, and every call while it is in step, passes through unchanged. `lagAfterLogsOf(tx, n)` falls
 * behind right after the first eth_getLogs answer that holds `tx` (the chain scan's view of the transfer came
 * from the backend that was up to date, the next calls reach the one that is not). `hideReceiptOf(tx)`: the
 * receipt of `tx` is not found (it comes from a backend that has not got its block yet), however far the
 * chain has grown, while everything else is in step. `failReceiptOf(tx)` and `failMethod(m)` answer with a
 * JSON-RPC error instead (a rate-limited endpoint). `holdReceiptOf(tx)` keeps the next receipt call of `tx`
 * unanswered until `releaseReceipt()` (or `catchUp()`): a slow backend, for as long as a test needs;
 * `slowMethod(m, ms)` answers every call of `m` that much later; `slowCallOf(selector, ms)` every eth_call of
 * that function.
 */
export class LaggingRpc {
  private server: Server | null = null;
  private lag = 0;
  private logsLag = 0;
  /** eth_getLogs calls answered while only the logs lagged (see lagLogs). */
  logsAnsweredBehind = 0;
  private armed: { txHash: string; lag: number } | null = null;
  private readonly hidden = new Set<string>();
  private readonly failing = new Set<string>();
  private readonly failingMethods = new Set<string>();
  private readonly slowMethods = new Map<string, number>();
  private readonly slowCalls = new Map<string, number>();
  private readonly receiptCalls = new Map<string, number>();
  private holding: { txHash: string; held: boolean; release: () => void; released: Promise<void> } | null = null;
  port = 0;

  constructor(private readonly target: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Behind by `blocks` from now on: the tip it reports stays that far below the node's (a backend that stopped syncing). */
  lagBy(blocks: number): void {
    this.lag = blocks;
  }

  lagAfterLogsOf(txHash: string, blocks: number): void {
    this.armed = { txHash: txHash.toLowerCase(), lag: blocks };
  }

  hideReceiptOf(txHash: string): void {
    this.hidden.add(txHash.toLowerCase());
  }

  /** The receipt of `tx` is answered with an error, as a rate-limited (429-like) endpoint does; the rest is in step. */
  failReceiptOf(txHash: string): void {
    this.hidden.delete(txHash.toLowerCase());
    this.failing.add(txHash.toLowerCase());
  }

  /** Every call of `method` is answered with an error (until catchUp). */
  failMethod(method: string): void {
    this.failingMethods.add(method);
  }

  /** Every call of `method` is answered `ms` later than the node answers it (until catchUp): a slow backend. */
  slowMethod(method: string, ms: number): void {
    this.slowMethods.set(method, ms);
  }

  /** Every eth_call whose data starts with `selector` is answered `ms` later (until catchUp). */
  slowCallOf(selector: string, ms: number): void {
    this.slowCalls.set(selector.toLowerCase(), ms);
  }

  /** The next receipt call of `tx` waits for `releaseReceipt()`; the calls after it pass. */
  holdReceiptOf(txHash: string): void {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holding = { txHash: txHash.toLowerCase(), held: false, release, released };
  }

  /** Whether the receipt call armed by holdReceiptOf is waiting now. */
  get holdingReceipt(): boolean {
    return this.holding?.held ?? false;
  }

  releaseReceipt(): void {
    this.holding?.release();
    this.holding = null;
  }

  /** How many receipt calls of `tx` came in so far. */
  receiptCallsOf(txHash: string): number {
    return this.receiptCalls.get(txHash.toLowerCase()) ?? 0;
  }

  /**
   * eth_getLogs alone is answered by a backend `blocks` behind (the tip, blocks and receipts come from one in
   * step): a range is clamped to its head, without an error, as geth does, and a block hash it does not have
   * is refused as unknown, as EIP-234 asks.
   */
  lagLogs(blocks: number): void {
    this.logsLag = blocks;
  }

  /** Whether the lag has set in (after the armed eth_getLogs answer). */
  get lagging(): boolean {
    return this.lag > 0;
  }

  /** In step with the node again. */
  catchUp(): void {
    this.lag = 0;
    this.logsLag = 0;
    this.armed = null;
    this.hidden.clear();
    this.failing.clear();
    this.failingMethods.clear();
    this.slowMethods.clear();
    this.slowCalls.clear();
    this.releaseReceipt();
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcRequest | RpcRequest[];
        const answer = Array.isArray(body) ? Promise.all(body.map((r) => this.handle(r))) : this.handle(body);
        answer.then(
          (out) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out)),
          (e: Error) => res.writeHead(502).end(e.message),
        );
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  private async handle(req: RpcRequest): Promise<RpcResponse> {
    const receiptOf = req.method === 'eth_getTransactionReceipt' ? String(req.params?.[0]).toLowerCase() : null;
    if (receiptOf !== null) {
      this.receiptCalls.set(receiptOf, (this.receiptCalls.get(receiptOf) ?? 0) + 1);
      const h = this.holding;
      if (h && h.txHash === receiptOf && !h.held) {
        h.held = true;
        await h.released;
      }
    }
    const callData = req.method === 'eth_call' ? String((req.params?.[0] as { data?: string } | undefined)?.data ?? '').toLowerCase() : '';
    const slow = this.slowMethods.get(req.method) ?? [...this.slowCalls].find(([selector]) => callData.startsWith(selector))?.[1];
    if (slow !== undefined) await new Promise((resolve) => setTimeout(resolve, slow));
    if (this.failingMethods.has(req.method) || (receiptOf !== null && this.failing.has(receiptOf))) {
      return { jsonrpc: '2.0', id: req.id, error: { code: -32005, message: 'request rate exceeded' } };
    }
    const out = await this.forward(req);
    if (out.error !== undefined) return out;
    if (req.method === 'eth_getTransactionReceipt' && this.hidden.has(String(req.params?.[0]).toLowerCase())) return { ...out, result: null };
    if (this.lag > 0) return this.behind(req, out, this.lag);
    if (this.logsLag > 0 && req.method === 'eth_getLogs') {
      this.logsAnsweredBehind++;
      return this.behind(req, out, this.logsLag);
    }
    if (req.method === 'eth_getLogs' && this.armed && Array.isArray(out.result)) {
      const logs = out.result as { transactionHash: string }[];
      if (logs.some((l) => l.transactionHash.toLowerCase() === this.armed!.txHash)) {
        this.lag = this.armed.lag;
        this.armed = null;
      }
    }
    return out;
  }

  /** The answer of a backend `lag` blocks behind the node. */
  private async behind(req: RpcRequest, out: RpcResponse, lag: number): Promise<RpcResponse> {
    const tip = numberOf((await this.forward({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber', params: [] })).result) - lag;
    const above = (hex: unknown) => numberOf(hex) > tip;
    switch (req.method) {
      case 'eth_blockNumber':
        return { ...out, result: quantity(Math.max(0, tip)) };
      case 'eth_getBlockByNumber': {
        const block = out.result as { number: string } | null;
        return block && above(block.number) ? { ...out, result: null } : out;
      }
      case 'eth_getTransactionReceipt': {
        const receipt = out.result as { blockNumber: string | null } | null;
        return receipt?.blockNumber != null && above(receipt.blockNumber) ? { ...out, result: null } : out;
      }
      case 'eth_getLogs': {
        const blockHash = (req.params?.[0] as { blockHash?: string } | undefined)?.blockHash;
        if (blockHash !== undefined) {
          const block = (await this.forward({ jsonrpc: '2.0', id: 0, method: 'eth_getBlockByHash', params: [blockHash, false] })).result as { number: string } | null;
          if (!block || above(block.number)) return { jsonrpc: '2.0', id: req.id, error: { code: -32000, message: 'unknown block' } };
          return out;
        }
        return { ...out, result: (out.result as { blockNumber: string }[]).filter((l) => !above(l.blockNumber)) };
      }
      default:
        return out;
    }
  }

  private async forward(req: RpcRequest): Promise<RpcResponse> {
    const res = await fetch(this.target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(req),
    });
    return (await res.json()) as RpcResponse;
  }
}

/** A fresh Hardhat node with a 6-decimal token minted to `payer`, and a LaggingRpc in front of it. */
export async function startLaggingChain(payer: string): Promise<{ node: LocalNode; token: string; rpc: LaggingRpc }> {
  const node = await startLocalNode({ port: await findFreePort() });
  const token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  await mint(node.url, token, new Wallet(payer).address, 10n ** 15n);
  const rpc = new LaggingRpc(node.url);
  await rpc.start();
  return { node, token, rpc };
}

/** A service with its worker that scans and verifies often, test mode reading `token` through `rpc`; `env` adds. */
export function startScanningService(rpc: LaggingRpc, token: string, env: Record<string, string>): Promise<TestService> {
  return startService({
    worker: true,
    env: {
      CHAIN_TEST_RPC_URL: rpc.url,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      EXPIRY_SWEEP_INTERVAL_MS: '300',
      CHAIN_RPC_TIMEOUT_MS: '2000',
      ...env,
    },
  });
}

/** A lagging chain, one scanning service in front of it, and a partner with an onboarded merchant. */
export interface ScanningFixture {
  node: LocalNode;
  token: string;
  rpc: LaggingRpc;
  svc: TestService;
  partner: TestPartner;
  merchant: { id: string; wallet: Wallet };
}

/** startLaggingChain and startScanningService (`env` adds), then a partner and its onboarded merchant. */
export async function startScanningFixture(payer: string, env: Record<string, string>): Promise<ScanningFixture> {
  const { node, token, rpc } = await startLaggingChain(payer);
  const svc = await startScanningService(rpc, token, env);
  const partner = await createPartner(svc);
  const merchant = await createOnboardedMerchant(svc, partner.testKey);
  return { node, token, rpc, svc, partner, merchant };
}

/** Undoes startLaggingChain and startScanningService (any may be missing after a failed start), and the SQL pool. */
export async function stopScanning(svc?: TestService, rpc?: LaggingRpc, node?: LocalNode): Promise<void> {
  await closeSql();
  await svc?.close();
  await rpc?.stop();
  await node?.stop();
}
