import type { Confirmations } from '../../../config/config';
import { decodeTransferLog, type ChainReceipt, type ChainTransfer } from '../../chain/chain-reader';
import { EARLY_TOLERANCE_MS } from './pay-rule';

/**
 * The depth rules of DESIGN §7 "Finality", pure. A requirement is a number of confirmations N (the
 * transfer's own block counts as the first, DESIGN §3) or `finalized` (the node's finalized block).
 * Both reduce to one question: up to which block number is the chain deep enough?
 */

/** What the node says about its head: the tip, and the finalized block's number when it was read. */
export interface ChainHead {
  tip: number;
  finalized: number | null;
}

/**
 * The highest block number that meets `required` at this head: with N confirmations, tip − N + 1; with
 * `finalized`, the finalized block (−1 when the node names none, so nothing qualifies). A block at or
 * below it is deep enough, provided it is still canonical — that is the caller's re-read.
 */
export function deepThrough(required: Confirmations, head: ChainHead): number {
  if (required === 'finalized') return head.finalized ?? -1;
  return head.tip - required + 1;
}

export function isDeepEnough(blockNumber: number, required: Confirmations, head: ChainHead): boolean {
  return blockNumber <= deepThrough(required, head);
}

/**
 * How deep a verified claim must be before it is settled and no longer re-read: twice the confirmation
 * depth, or, for `finalized`, finality itself (a finalized block cannot be reorged without slashing).
 */
export function settleDepth(required: Confirmations): Confirmations {
  return required === 'finalized' ? 'finalized' : required * 2;
}

/** A verified claim as the finality job re-reads it: the transfer that paid, and where it was last seen. */
export interface ClaimToRecheck {
  txHash: string;
  logIndex: number;
  tokenAddress: string;
  recipient: string;
  amount: bigint;
  /** Null for a claim verified before blocks were recorded: found again through its receipt. */
  blockNumber: number | null;
  blockHash: string | null;
  /** The pay rule's window (DESIGN §3): a block the transfer moves to must lie within it too. */
  createdAt: Date;
  claimUntil: Date;
}

export type VanishedReason = 'receipt_missing' | 'receipt_not_canonical' | 'transaction_failed' | 'transfer_missing';

/** Why a claim is lost: its transfer vanished, or it is still there but outside the pay window. */
export type LostReason = VanishedReason | 'moved_outside_window';

/**
 * Where a claim stands. `inWindow`: whether the block it is in now lies within the pay rule's window (DESIGN
 * §3); a transaction re-included outside it pays nothing, however it first verified. Such a claim still
 * follows its transfer and holds it while it is re-read (else one payment could verify a request of the same
 * amount too, and a later reorg back into the window would find it lost), and is lost, not settled, once
 * its block is deep enough.
 */
export type ClaimStanding =
  | { kind: 'in_place'; blockNumber: number; blockHash: string; inWindow: boolean }
  | { kind: 'moved'; blockNumber: number; blockHash: string; logIndex: number; inWindow: boolean }
  | { kind: 'vanished'; reason: VanishedReason };

/** Whether a block of this time (unix seconds) lies within the claim's pay window (pay-rule.ts's bounds). */
function inPayWindow(claim: ClaimToRecheck, blockTime: number): boolean {
  const at = blockTime * 1000;
  return at >= claim.createdAt.getTime() - EARLY_TOLERANCE_MS && at <= claim.claimUntil.getTime();
}

/**
 * Whether the claimed log is still on the canonical chain. A block's content is fixed by its hash, so when
 * the canonical block at the claimed height still has the claimed hash, the log is there. Otherwise the
 * transaction's receipt decides: re-included in a canonical block with the same transfer (same token,
 * recipient and value; its log index may differ) the claim moved there; anything else means the money the
 * partner was told about is gone from the chain. Either way it says whether that block is in the pay window.
 */
export function claimStanding(
  claim: ClaimToRecheck,
  seen: {
    blockAtClaim: { hash: string; timestamp: number } | null;
    receipt: ChainReceipt | null;
    receiptBlock: { hash: string; timestamp: number } | null;
  },
): ClaimStanding {
  if (claim.blockNumber !== null && claim.blockHash !== null && seen.blockAtClaim?.hash === claim.blockHash) {
    return { kind: 'in_place', blockNumber: claim.blockNumber, blockHash: claim.blockHash, inWindow: inPayWindow(claim, seen.blockAtClaim.timestamp) };
  }
  const r = seen.receipt;
  if (!r) return { kind: 'vanished', reason: 'receipt_missing' };
  if (seen.receiptBlock?.hash !== r.blockHash) return { kind: 'vanished', reason: 'receipt_not_canonical' };
  if (r.status !== 1) return { kind: 'vanished', reason: 'transaction_failed' };
  const transfers = r.logs.map(decodeTransferLog).filter((t): t is ChainTransfer => t !== null);
  // The pay rule's transfer (pay-rule.ts): the token's, to the wallet, of the amount, and not from the wallet itself
  // (a re-executed transaction whose logs changed may now hold a self-transfer, which moves no money).
  const same = (t: ChainTransfer) =>
    t.token === claim.tokenAddress && t.to === claim.recipient && t.from !== claim.recipient && t.value === claim.amount;
  const found = transfers.find((t) => same(t) && t.logIndex === claim.logIndex) ?? transfers.find(same);
  if (!found) return { kind: 'vanished', reason: 'transfer_missing' };
  const inWindow = inPayWindow(claim, seen.receiptBlock.timestamp);
  if (r.blockNumber === claim.blockNumber && r.blockHash === claim.blockHash && found.logIndex === claim.logIndex) {
    return { kind: 'in_place', blockNumber: r.blockNumber, blockHash: r.blockHash, inWindow };
  }
  return { kind: 'moved', blockNumber: r.blockNumber, blockHash: r.blockHash, logIndex: found.logIndex, inWindow };
}
