import { decodeTransferLog, type ChainReceipt, type ChainTransfer } from '../../chain/chain-reader';

/** What a request needs to be paid (snapshotted on it at creation). */
export interface PayTarget {
  chainId: bigint;
  tokenAddress: string;
  recipient: string;
  amount: bigint;
  createdAt: Date;
  claimUntil: Date;
}

/** What was observed on the canonical chain for one transaction, at the required confirmations. */
export interface ObservedTx {
  chainId: bigint;
  receipt: ChainReceipt;
  /** Timestamp (unix seconds) of the block that holds the receipt. */
  blockTime: number;
}

export type NoPayReason =
  | 'wrong_chain'
  | 'transaction_failed'
  | 'no_transfer_to_recipient'
  | 'wrong_token'
  | 'underpaid'
  | 'overpaid'
  | 'before_request'
  | 'after_window';

export type PayVerdict = { pays: true; transfers: ChainTransfer[] } | { pays: false; reason: NoPayReason };

/** A transfer may be mined at most this long before the request was created (clock skew between hosts). */
export const EARLY_TOLERANCE_MS = 60_000;

/**
 * DESIGN §3 "What pays a request R", as one pure function: a successful transaction on R's chain with a
 * standard ERC-20 Transfer log emitted by R's token, to R's wallet from another address, of exactly R's amount, in a block whose
 * time is within [created_at − 60 s, expires_at + grace]. Returns every log that qualifies, in log order:
 * the caller claims the first one no other request holds. Safe to run any number of times.
 */
export function judgeTransaction(target: PayTarget, observed: ObservedTx): PayVerdict {
  if (observed.chainId !== target.chainId) return { pays: false, reason: 'wrong_chain' };
  if (observed.receipt.status !== 1) return { pays: false, reason: 'transaction_failed' };
  // A transfer from the wallet to itself moves no money: it pays nothing (the merchant's own
  // self-transfer verified its request).
  const toRecipient = observed.receipt.logs
    .map(decodeTransferLog)
    .filter((t): t is ChainTransfer => t !== null && t.to === target.recipient && t.from !== target.recipient);
  if (toRecipient.length === 0) return { pays: false, reason: 'no_transfer_to_recipient' };
  const ofToken = toRecipient.filter((t) => t.token === target.tokenAddress);
  if (ofToken.length === 0) return { pays: false, reason: 'wrong_token' };
  const exact = ofToken.filter((t) => t.value === target.amount);
  if (exact.length === 0) {
    return { pays: false, reason: ofToken.every((t) => t.value < target.amount) ? 'underpaid' : 'overpaid' };
  }
  const at = observed.blockTime * 1000;
  if (at < target.createdAt.getTime() - EARLY_TOLERANCE_MS) return { pays: false, reason: 'before_request' };
  if (at > target.claimUntil.getTime()) return { pays: false, reason: 'after_window' };
  return { pays: true, transfers: exact };
}

/** Confirmations of a block at the given tip: the block holding the transfer counts as the first (DESIGN §3). */
export function confirmations(blockNumber: number, tip: number): number {
  return tip < blockNumber ? 0 : tip - blockNumber + 1;
}
