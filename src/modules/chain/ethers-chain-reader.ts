import { AbiCoder, FetchRequest, JsonRpcProvider, Network, concat, getBytes, isError, toQuantity, toUtf8String } from 'ethers';
import {
  type ChainBlock,
  type ChainLog,
  type ChainReader,
  type ChainReceipt,
  type ChainTransaction,
  type ChainTransfer,
  type TransferQuery,
  TRANSFER_TOPIC,
  decodeTransferLog,
  NoTokenContract,
} from './chain-reader';
import { ADDRESS_PATTERN } from '../../common/address';
import { VALIDATE_SIG_OFFCHAIN_BYTECODE } from './validate-sig-offchain.bytecode';
import { urlsToOrigins } from '../../common/url-origins';

interface RpcBlock {
  number: string;
  hash: string;
  timestamp: string;
}

interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  removed?: boolean;
}

interface RpcReceipt {
  transactionHash: string;
  status?: string;
  blockNumber: string;
  blockHash: string;
  from: string;
  to: string | null;
  logs: RpcLog[];
}

const HASH = /^0x[0-9a-fA-F]{64}$/;
/**
 * Gas for one contract-signature check (ERC-1271, or ERC-6492 deploying a counterfactual wallet first). The
 * validator deploys itself in every call, about 707,000 of it (measured with eth_estimateGas); a Safe proxy's
 * deployment and its check take a few hundred thousand more. 3,000,000 leaves a wallet over two million, and
 * bounds what an anonymous caller's contract can make the node run; a wallet that needs more reads as a bad
 * signature.
 */
export const SIGNATURE_CHECK_GAS = 3_000_000;
/**
 * What the EVM says when the code ran and failed, as Hardhat, Geth, Erigon, Nethermind, Besu and Reth ("EVM
 * error InvalidJump", code -32003) word it on an eth_call: a revert, running out of gas, an invalid opcode or jump, a stack fault. A node's own trouble
 * ("header not found", a rate limit, an internal error) matches none of them.
 */
const EVM_FAULT =
  /revert|out of gas|invalid opcode|opcode 0x[0-9a-f]+ not defined|bad instruction|invalid jump|stack (underflow|overflow|limit)|VM Exception|write protection|return data out of bounds|max code size|max initcode size|contract address collision|call depth|precompile|VM execution error|^EVM error |invalid code|gas uint64 overflow/i;

/**
 * Whether a JSON-RPC error of an eth_call is the call's code failing (an answer about the call) rather than the
 * node failing (no answer). Geth's code 3 is "execution reverted" with revert data; Nethermind's -32015 is its
 * "VM execution error".
 */
export function isExecutionFault(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 3 || code === -32015 || (typeof message === 'string' && EVM_FAULT.test(message));
}
const DECIMALS_SELECTOR = '0x313ce567'; // decimals()
const SYMBOL_SELECTOR = '0x95d89b41'; // symbol()

/**
 * ChainReader over JSON-RPC with ethers v6. Every call re-reads the node (no response cache, so confirmations
 * and reorgs are seen at once) and rejects within `timeoutMs`, whatever the node does, so callers can back off.
 */
export class EthersChainReader implements ChainReader {
  private provider: JsonRpcProvider | null = null;
  private connecting: Promise<JsonRpcProvider> | null = null;
  private readonly request: FetchRequest;

  constructor(
    rpcUrl: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.request = new FetchRequest(rpcUrl);
    this.request.timeout = timeoutMs;
  }

  async chainId(): Promise<bigint> {
    return BigInt(await this.call<string>('eth_chainId', []));
  }

  async tip(): Promise<number> {
    return Number(await this.call<string>('eth_blockNumber', []));
  }

  async block(numberOrHash: number | string): Promise<ChainBlock | null> {
    let raw: RpcBlock | null;
    if (typeof numberOrHash === 'number') {
      if (!Number.isSafeInteger(numberOrHash) || numberOrHash < 0) {
        throw new TypeError(`invalid block number: ${numberOrHash}`);
      }
      raw = await this.call<RpcBlock | null>('eth_getBlockByNumber', [toQuantity(numberOrHash), false]);
    } else {
      if (!HASH.test(numberOrHash)) throw new TypeError(`invalid block hash: ${numberOrHash}`);
      raw = await this.call<RpcBlock | null>('eth_getBlockByHash', [numberOrHash, false]);
    }
    if (!raw) return null;
    return { number: Number(raw.number), hash: raw.hash.toLowerCase(), timestamp: Number(raw.timestamp) };
  }

  async finalizedBlock(): Promise<ChainBlock | null> {
    const raw = await this.call<RpcBlock | null>('eth_getBlockByNumber', ['finalized', false]);
    return raw ? { number: Number(raw.number), hash: raw.hash.toLowerCase(), timestamp: Number(raw.timestamp) } : null;
  }

  async receipt(txHash: string): Promise<ChainReceipt | null> {
    if (!HASH.test(txHash)) throw new TypeError(`invalid transaction hash: ${txHash}`);
    const raw = await this.call<RpcReceipt | null>('eth_getTransactionReceipt', [txHash]);
    // Some nodes return a receipt for a pending transaction with a null block; it is not mined yet.
    if (!raw || raw.blockHash == null || raw.blockNumber == null) return null;
    return {
      txHash: raw.transactionHash.toLowerCase(),
      // Receipts from before Byzantium carry a state root instead of a status; never treat them as successful.
      status: raw.status == null ? 0 : Number(raw.status),
      blockNumber: Number(raw.blockNumber),
      blockHash: raw.blockHash.toLowerCase(),
      from: raw.from.toLowerCase(),
      to: raw.to ? raw.to.toLowerCase() : null,
      logs: raw.logs.map(toChainLog),
    };
  }

  async transaction(txHash: string): Promise<ChainTransaction | null> {
    if (!HASH.test(txHash)) throw new TypeError(`invalid transaction hash: ${txHash}`);
    const raw = await this.call<{ hash: string; blockNumber: string | null } | null>('eth_getTransactionByHash', [txHash]);
    if (!raw) return null;
    return { hash: raw.hash.toLowerCase(), blockNumber: raw.blockNumber == null ? null : Number(raw.blockNumber) };
  }

  /**
   * Callers keep [fromBlock, toBlock] within their provider's eth_getLogs range limit. A range answered by a
   * node whose head is below its end holds only the logs up to that head, without an error; a block hash the
   * node does not have is refused (EIP-234), so only the by-hash form proves the node read the block.
   */
  async transfers(q: TransferQuery): Promise<ChainTransfer[]> {
    // An empty recipient list would become a null topic, which matches every recipient.
    if (q.to.length === 0) return [];
    let blocks: { fromBlock: string; toBlock: string } | { blockHash: string };
    if ('blockHash' in q) {
      if (!HASH.test(q.blockHash)) throw new TypeError(`invalid block hash: ${q.blockHash}`);
      blocks = { blockHash: q.blockHash.toLowerCase() };
    } else {
      if (q.fromBlock > q.toBlock) return [];
      blocks = { fromBlock: toQuantity(q.fromBlock), toBlock: toQuantity(q.toBlock) };
    }
    const token = q.token.toLowerCase();
    const recipients = new Set(q.to.map((address) => address.toLowerCase()));
    const raw = await this.call<RpcLog[]>('eth_getLogs', [
      { address: checkedAddress(token), ...blocks, topics: [TRANSFER_TOPIC, null, [...recipients].map(addressToTopic)] },
    ]);
    const result: ChainTransfer[] = [];
    for (const log of raw) {
      if (log.removed) continue;
      if ('blockHash' in blocks && log.blockHash.toLowerCase() !== blocks.blockHash) {
        throw new Error(`eth_getLogs for block ${blocks.blockHash} answered a log of block ${log.blockHash}`);
      }
      const transfer = decodeTransferLog(toChainLog(log));
      // Re-checked here rather than trusted: a filter the node ignored must not turn into a payment.
      if (transfer && transfer.token === token && recipients.has(transfer.to)) result.push(transfer);
    }
    return result.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  }

  async tokenInfo(token: string): Promise<{ decimals: number; symbol: string }> {
    const to = checkedAddress(token);
    // A revert is the contract's answer, not the node's trouble: the address holds something other than a token.
    const read = (data: string, fn: string) =>
      this.call<string>('eth_call', [{ to, data }, 'latest']).catch((e: unknown) => {
        if (isError(e, 'CALL_EXCEPTION') && isExecutionFault(e.info?.error)) throw new NoTokenContract(to, `${fn} reverted`);
        throw e;
      });
    // Both asked at once; when both fail, decimals()'s failure is the one reported, whichever came back first.
    const answers = await Promise.allSettled([read(DECIMALS_SELECTOR, 'decimals()'), read(SYMBOL_SELECTOR, 'symbol()')]);
    const [decimalsData, symbolData] = answers.map((a) => {
      if (a.status === 'rejected') throw a.reason;
      return a.value;
    });
    // An empty answer is also what a call to an address without code returns: say which it is.
    if (decimalsData === '0x' && (await this.call<string>('eth_getCode', [to, 'latest'])) === '0x') throw new NoTokenContract(to);
    try {
      return { decimals: decodeDecimals(token, decimalsData), symbol: decodeSymbol(token, symbolData) };
    } catch (e) {
      throw new NoTokenContract(to, (e as Error).message);
    }
  }

  async isValidSignature(signer: string, digest: string, signature: string): Promise<boolean> {
    if (!HASH.test(digest)) throw new TypeError(`invalid digest: ${digest}`);
    if (!/^0x([0-9a-fA-F]{2})*$/.test(signature)) return false;
    // ERC-6492's deployless check: eth_call of the validator's creation code with its arguments, no `to`.
    // The constructor returns one byte, 0x01 when valid; a counterfactual wallet is deployed inside the call only.
    const args = AbiCoder.defaultAbiCoder().encode(['address', 'bytes32', 'bytes'], [checkedAddress(signer), digest, signature]);
    try {
      // With a gas limit of its own: the signer and an ERC-6492 factory are the caller's choice, and without one
      // the node ran the caller's code up to its own cap (a contract that loops took seconds of the node per
      // anonymous sign-in attempt, and payers' proofs waited; an abuse hunt).
      const call = { data: concat([VALIDATE_SIG_OFFCHAIN_BYTECODE, args]), gas: toQuantity(SIGNATURE_CHECK_GAS) };
      const result = await this.call<string>('eth_call', [call, 'latest']);
      return result === '0x01';
    } catch (e) {
      // A revert (malformed signature, a wallet that throws) or running out of its gas means not valid; anything
      // else is the node's. Decided on the node's own error: ethers reports every JSON-RPC error of an eth_call as
      // CALL_EXCEPTION, "header not found" and a rate limit too, which must not read as a bad signature.
      if (isError(e, 'CALL_EXCEPTION') && isExecutionFault(e.info?.error)) return false;
      throw e;
    }
  }

  /** Releases the underlying provider; later calls reconnect. */
  destroy(): void {
    this.provider?.destroy();
    this.provider = null;
    this.connecting = null;
  }

  private async call<T>(method: string, params: unknown[]): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`chain RPC ${method} timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    });
    try {
      const response = onceMoreOnReset(() => this.connect().then((provider) => provider.send(method, params) as Promise<T>));
      return await Promise.race([response, timeout]);
    } catch (e) {
      throw withoutUrlSecrets(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Without a known network, an ethers provider retries network detection every second forever while the node
   * is down, and every call waits on it. So the chain id is read once with a plain request, then the provider
   * is built with that static network; a failed first read is retried on the next call.
   */
  private connect(): Promise<JsonRpcProvider> {
    if (this.provider) return Promise.resolve(this.provider);
    this.connecting ??= (async () => {
      try {
        const request = this.request.clone();
        request.body = { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] };
        const response = await request.send();
        response.assertOk();
        const body = response.bodyJson as { result?: string; error?: { message?: string } };
        if (typeof body.result !== 'string') {
          throw new Error(`eth_chainId failed: ${body.error?.message ?? 'no result'}`);
        }
        const network = Network.from(BigInt(body.result));
        this.provider = new JsonRpcProvider(this.request, network, {
          staticNetwork: network,
          cacheTimeout: -1,
          // One request per call: many hosted RPCs limit or reject JSON-RPC batches, and one slow call must not
          // hold others back.
          batchMaxCount: 1,
        });
        return this.provider;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }
}

/** How Node's http client reports a connection lost before the answer (http.Agent's kept-alive sockets). */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Node's http agent keeps sockets alive for 5 s and many nodes close idle ones after 5 s too (Hardhat, Node
 * servers' default): a request made as the node closes its socket fails with "socket hang up" before the node
 * saw it. Every call here is a read (the connect's eth_chainId too), so one lost that way is sent once more
 * (the dropped socket is gone from the agent: on a fresh one, unless the agent holds another idle one); a
 * second loss is the node's answer. The caller's deadline covers both.
 */
async function onceMoreOnReset<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (e) {
    if (!RESET_CODES.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
    return send();
  }
}

/**
 * ethers quotes the request URL whole in its errors ("server response 502 … requestUrl"), and the RPC URL often
 * carries a key or a password; these errors travel on as job failures (stored in Redis, shown on the queue
 * board), readiness details and logs. The same error, its URLs cut to their origin.
 */
function withoutUrlSecrets(e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  e.message = urlsToOrigins(e.message);
  if (e.stack) e.stack = urlsToOrigins(e.stack);
  const info = (e as { info?: Record<string, unknown> }).info;
  if (info && typeof info.requestUrl === 'string') info.requestUrl = urlsToOrigins(info.requestUrl);
  return e;
}

function toChainLog(log: RpcLog): ChainLog {
  return {
    address: log.address.toLowerCase(),
    topics: log.topics.map((topic) => topic.toLowerCase()),
    data: log.data.toLowerCase(),
    logIndex: Number(log.logIndex),
    blockNumber: Number(log.blockNumber),
    blockHash: log.blockHash.toLowerCase(),
    transactionHash: log.transactionHash.toLowerCase(),
    ...(log.removed !== undefined ? { removed: log.removed } : {}),
  };
}

function checkedAddress(address: string): string {
  if (!ADDRESS_PATTERN.test(address)) throw new TypeError(`invalid address: ${address}`);
  return address.toLowerCase();
}

function addressToTopic(address: string): string {
  return `0x${checkedAddress(address).slice(2).padStart(64, '0')}`;
}

function decodeDecimals(token: string, data: string): number {
  // An address without code answers eth_call with empty data.
  if (data.length < 66) throw new Error(`token ${token} did not answer decimals()`);
  const [value] = AbiCoder.defaultAbiCoder().decode(['uint256'], data) as unknown as [bigint];
  if (value > 255n) throw new Error(`token ${token} reports ${value} decimals`);
  return Number(value);
}

function decodeSymbol(token: string, data: string): string {
  if (data.length < 66) throw new Error(`token ${token} did not answer symbol()`);
  try {
    return AbiCoder.defaultAbiCoder().decode(['string'], data)[0] as string;
  } catch {
    // Some early tokens (MKR, SAI) return symbol() as bytes32, zero-padded on the right.
    const bytes = getBytes(data).slice(0, 32);
    const end = bytes.indexOf(0);
    return toUtf8String(end === -1 ? bytes : bytes.slice(0, end));
  }
}
