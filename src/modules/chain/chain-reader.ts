/**
 * The port through which the service reads an EVM chain. Pure types and one pure decoder: no ethers here.
 * Every address and hash in returned objects is lowercased.
 */

export interface ChainBlock {
  number: number;
  hash: string;
  /** unix seconds */
  timestamp: number;
}

export interface ChainLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  transactionHash: string;
  removed?: boolean;
}

export interface ChainReceipt {
  txHash: string;
  status: number;
  blockNumber: number;
  blockHash: string;
  from: string;
  to: string | null;
  logs: ChainLog[];
}

/** A transaction as the node knows it: mined (blockNumber set) or still pending (null). */
export interface ChainTransaction {
  hash: string;
  blockNumber: number | null;
}

export interface ChainTransfer {
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  token: string;
  from: string;
  to: string;
  value: bigint;
}

/**
 * Transfer logs of `token` to any of `to`: over a block range, or in the one block named by its hash
 * (EIP-234), which a node that does not have that block must refuse rather than answer empty.
 */
export type TransferQuery = { token: string; to: string[] } & ({ fromBlock: number; toBlock: number } | { blockHash: string });

/**
 * The node answers, but there is no token contract at the token address: no code at all (a typo, or a node
 * without the deploy), or, with `why`, a contract that is not an ERC-20 (decimals() reverts or answers nonsense).
 */
export class NoTokenContract extends Error {
  constructor(
    readonly token: string,
    readonly why?: string,
  ) {
    super(why ? `the contract at token address ${token} is not an ERC-20 token: ${why}` : `no contract at token address ${token}`);
  }
}

export interface ChainReader {
  chainId(): Promise<bigint>;
  tip(): Promise<number>;
  block(numberOrHash: number | string): Promise<ChainBlock | null>;
  /** The node's finalized block (`eth_getBlockByNumber("finalized")`); null when the node names none yet. */
  finalizedBlock(): Promise<ChainBlock | null>;
  receipt(txHash: string): Promise<ChainReceipt | null>;
  /** eth_getTransactionByHash: null when the node does not know the hash at all (neither mined nor pending). */
  transaction(txHash: string): Promise<ChainTransaction | null>;
  transfers(q: TransferQuery): Promise<ChainTransfer[]>;
  tokenInfo(token: string): Promise<{ decimals: number; symbol: string }>;
  /**
   * Whether `signature` is `signer`'s over the 32-byte `digest` as a contract wallet sees it: ERC-1271
   * (a deployed contract wallet, e.g. a Safe) or ERC-6492 (a smart wallet not deployed yet). Resolves false
   * for a signature that is not valid; rejects only when the node cannot answer.
   */
  isValidSignature(signer: string, digest: string, signature: string): Promise<boolean>;
}

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

// An indexed address is left-padded to 32 bytes; anything in the 12 padding bytes means it is not an address.
const ADDRESS_TOPIC = /^0x0{24}([0-9a-f]{40})$/;
const WORD = /^0x[0-9a-f]{64}$/;

/** A standard ERC-20 Transfer log: exactly 3 topics, 32-byte data. Returns null for anything else. */
export function decodeTransferLog(log: ChainLog): ChainTransfer | null {
  // ERC-721 emits the same topic0 with the token id as a 4th topic and empty data; must never count as money.
  if (log.topics.length !== 3) return null;
  const [topic0, fromTopic, toTopic] = log.topics.map((t) => t.toLowerCase());
  if (topic0 !== TRANSFER_TOPIC) return null;
  const from = ADDRESS_TOPIC.exec(fromTopic);
  const to = ADDRESS_TOPIC.exec(toTopic);
  const data = log.data.toLowerCase();
  if (!from || !to || !WORD.test(data)) return null;
  return {
    txHash: log.transactionHash.toLowerCase(),
    logIndex: log.logIndex,
    blockNumber: log.blockNumber,
    blockHash: log.blockHash.toLowerCase(),
    token: log.address.toLowerCase(),
    from: `0x${from[1]}`,
    to: `0x${to[1]}`,
    value: BigInt(data),
  };
}
