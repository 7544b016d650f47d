import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { MODES, type Mode } from '../../../config/config';
import { AlertsService } from '../../alerts/alerts.service';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainReader, ChainReceipt } from '../../chain/chain-reader';
import { isUniqueViolation } from '../../../database/pg-errors';
import { MetricsService } from '../../ops/metrics.service';
import { claimStanding, deepThrough, isDeepEnough, settleDepth, type ChainHead, type ClaimStanding, type LostReason } from '../domain/finality';
import { ClaimFinalityRepository, type UnsettledClaim } from '../infrastructure/claim-finality.repository';
import { readHead } from './chain-head';

/** Claims re-read per mode and run; the rest wait for the next run. */
const BATCH = 200;
/** Pages of due claims one run reads at most, past transactions that cannot move (each an alert). */
const MAX_PAGES = 5;

/** What one mode's run reads against. */
interface Run {
  mode: Mode;
  chainId: bigint;
  reader: ChainReader;
  required: ReturnType<typeof settleDepth>;
  head: ChainHead;
}

export interface SettleReport {
  settled: number;
  moved: number;
  lost: number;
}

/**
 * DESIGN §7 "Finality": a verified claim is re-read until it is twice the confirmation depth deep (or, with
 * `finalized`, until its block is finalized). Still there: settled, never read again. Re-included in
 * another block: it follows the transaction there and waits for that block's depth. A claim whose block lies
 * outside the pay rule's window at that depth is lost with an alert instead of settled (the transfer pays
 * nothing; until then the claim holds it). Gone: an alert (error
 * log, `prs_verified_reorged_total`, a stored row listed by GET /admin/api/alerts). proof_status stays
 * `verified` and no event is sent: the partner was told, the money is a matter for operators, and a second
 * webhook saying the opposite is not in the partner contract.
 */
@Injectable()
export class FinalityService {
  private readonly logger = new Logger('Finality');

  constructor(
    private readonly dataSource: DataSource,
    private readonly claims: ClaimFinalityRepository,
    private readonly assets: AssetRegistry,
    private readonly alerts: AlertsService,
    private readonly metrics: MetricsService,
  ) {}

  async settleAll(): Promise<SettleReport> {
    await this.resolveUnmovable();
    const total: SettleReport = { settled: 0, moved: 0, lost: 0 };
    for (const mode of MODES) {
      const r = await this.settle(mode);
      total.settled += r.settled;
      total.moved += r.moved;
      total.lost += r.lost;
    }
    return total;
  }

  /** RPC failures throw: the run fails and the next scheduled one reads again. */
  async settle(mode: Mode): Promise<SettleReport> {
    const report: SettleReport = { settled: 0, moved: 0, lost: 0 };
    const reader = this.assets.reader(mode);
    const asset = this.assets.asset(mode);
    if (!reader || !asset) return report;
    const required = settleDepth(asset.confirmations);
    const run: Run = { mode, chainId: asset.chainId, reader, required, head: await readHead(reader, required) };
    // A node now on another chain has other blocks at every height: each claim would read as lost.
    if (!(await this.assets.onConfiguredChain(mode))) return report;
    // Every token of the chain, not only the mode's token now: a claim in a token the mode was moved away
    // from must still be re-read until settled. Transactions that cannot move stay first in line (their
    // blocks are the oldest), so the run pages past them: BATCH other claims are re-read all the same.
    const seen = new Set<string>();
    let reread = 0;
    let after: UnsettledClaim | undefined;
    for (let page = 0; page < MAX_PAGES && reread < BATCH; page++) {
      const due = await this.claims.due(run.chainId, mode === 'test', deepThrough(run.required, run.head), BATCH, after);
      for (const first of due) {
        if (reread >= BATCH) break;
        if (seen.has(first.txHash)) continue;
        seen.add(first.txHash);
        reread += await this.rereadTransaction(run, first.txHash, report);
      }
      if (due.length < BATCH) break;
      after = due[due.length - 1];
    }
    return report;
  }

  /**
   * Re-reads the claims of one transaction together (one unless it paid several requests: a reorg moves them
   * together) and stores where they stand; returns how many it re-read, 0 when they cannot move (they do not
   * count against the run's batch: a transaction stuck for good would otherwise take a share of every run).
   */
  private async rereadTransaction(run: Run, txHash: string, report: SettleReport): Promise<number> {
    const claims = await this.claims.ofTransaction(run.chainId, run.mode === 'test', txHash);
    const standings = await this.standings(run.reader, claims);
    // The vanished first: their alerts never wait on the others' move, and a lost claim lets go of its log
    // index (its alert keeps it), which a moved sibling may need (a batch re-included without one transfer).
    const lost: string[] = [];
    for (const { claim, standing } of standings) {
      if (standing.kind !== 'vanished') continue;
      if (await this.raise(run.mode, claim, standing.reason, run.head)) report.lost++;
      lost.push(claim.requestId);
    }
    // A claim follows its transaction wherever it was re-included, inside the pay window or not: it holds the
    // transfer while it is re-read, and the window is judged when its block is deep enough (below).
    const moves = standings.flatMap(({ claim, standing }) => (standing.kind === 'moved' ? [{ claim, to: standing }] : []));
    // Only for a move: a lost claim of a transaction that did not move keeps its index (its transfer, mined
    // again, pays no other request).
    if (moves.length > 0) await this.claims.releaseIndexes(lost);
    let movedIds = new Set<string>();
    let blocked = false;
    try {
      movedIds = new Set(await this.claims.moveTogether(moves.map(({ claim, to }) => ({ id: claim.requestId, ...to }))));
    } catch (e) {
      // A claim outside this transaction's unsettled ones (settled, or of the other mode) holds an index the
      // move needs: the claims cannot follow; an alert for operators, and they are read again next run (a
      // later reorg may free the index).
      if (!isUniqueViolation(e, 'payment_requests_claim')) throw e;
      // Outside its window at the settle depth, a claim is lost whoever holds its new index (the window alone
      // decides it), and lets go of its old index for its siblings. Every other one waits, with its alert.
      const lostNow = moves.filter(({ to }) => !to.inWindow && isDeepEnough(to.blockNumber, run.required, run.head));
      for (const { claim, to } of lostNow) if (await this.raise(run.mode, claim, 'moved_outside_window', run.head, to)) report.lost++;
      await this.claims.releaseIndexes(lostNow.map(({ claim }) => claim.requestId));
      const stuck = moves.filter((m) => !lostNow.includes(m));
      if (stuck.length > 0) await this.raiseUnmovable(run, stuck, (e as Error).message);
      // Siblings already where their transfer is (verified there after the reorg) are still settled below.
      blocked = true;
    }
    for (const { claim, standing } of standings) {
      if (standing.kind === 'vanished') continue;
      if (standing.kind === 'moved') {
        if (!movedIds.has(claim.requestId)) continue; // could not move, or settled or lost meanwhile by another worker
        report.moved++;
        const outside = standing.inWindow ? '' : ', outside its pay window: lost at the settle depth unless a reorg moves it back';
        this.logger.warn(`request ${claim.requestId}: ${claim.txHash}#${claim.logIndex} moved to block ${standing.blockNumber}#${standing.logIndex} (was ${claim.blockNumber})${outside}`);
      }
      if (!isDeepEnough(standing.blockNumber, run.required, run.head)) continue;
      if (standing.inWindow) {
        if (await this.claims.settle(claim.requestId, standing.blockNumber, standing.blockHash)) report.settled++;
      } else {
        // Deep enough outside the pay window: the transfer pays nothing, and the claim, which holds it, is lost.
        const at = { blockNumber: standing.blockNumber, blockHash: standing.blockHash, logIndex: standing.kind === 'moved' ? standing.logIndex : claim.logIndex };
        if (await this.raise(run.mode, claim, 'moved_outside_window', run.head, at)) report.lost++;
      }
    }
    return blocked ? 0 : claims.length;
  }

  /** Where each claim of one transaction stands now; the receipt is read once, and only if a block changed. */
  private async standings(reader: ChainReader, claims: UnsettledClaim[]): Promise<Array<{ claim: UnsettledClaim; standing: ClaimStanding }>> {
    const blocks = new Map<number, { hash: string; timestamp: number } | null>();
    let read: { receipt: ChainReceipt | null; receiptBlock: { hash: string; timestamp: number } | null } | undefined;
    const out: Array<{ claim: UnsettledClaim; standing: ClaimStanding }> = [];
    for (const claim of claims) {
      let blockAtClaim: { hash: string; timestamp: number } | null = null;
      if (claim.blockNumber !== null) {
        if (!blocks.has(claim.blockNumber)) blocks.set(claim.blockNumber, await reader.block(claim.blockNumber));
        blockAtClaim = blocks.get(claim.blockNumber)!;
      }
      let standing = claimStanding(claim, { blockAtClaim, receipt: null, receiptBlock: null });
      if (standing.kind !== 'in_place') {
        if (!read) {
          const receipt = await reader.receipt(claim.txHash);
          read = { receipt, receiptBlock: receipt ? await reader.block(receipt.blockNumber) : null };
        }
        standing = claimStanding(claim, { blockAtClaim, ...read });
      }
      out.push({ claim, standing });
    }
    return out;
  }

  /**
   * The claim no longer pays its request: marked lost with its alert, in one transaction (false when another
   * run decided it first). `movedTo`: where its transfer is now, for one re-included outside the pay window.
   */
  private async raise(mode: Mode, claim: UnsettledClaim, reason: LostReason, head: ChainHead, movedTo?: { blockNumber: number; blockHash: string; logIndex: number }): Promise<boolean> {
    const details = {
      ...claimDetails(mode, claim), reason, tip: head.tip, finalized: head.finalized,
      ...(movedTo ? { moved_to: { block_number: movedTo.blockNumber, block_hash: movedTo.blockHash, log_index: movedTo.logIndex } } : {}),
    };
    // Lost is for good (a lost claim is not re-read): asked again after the reads it rests on.
    if (!(await this.assets.onConfiguredChain(mode))) throw new Error(`${mode} mode's node is no longer on the claims' chain; nothing marked lost`);
    const raised = await this.dataSource.transaction(async (em) => {
      if (!(await this.claims.markLost(em, claim.requestId))) return false;
      await this.alerts.record(em, { kind: 'verified_reorged', requestId: claim.requestId, details });
      return true;
    });
    if (!raised) return false;
    this.metrics.countVerifiedReorged(mode);
    const where = movedTo
      ? `is in block ${movedTo.blockNumber}, outside the request's pay window: it pays nothing`
      : 'is no longer on the canonical chain';
    this.logger.error(
      `verified request ${claim.requestId} lost its payment: ${claim.txHash}#${claim.logIndex} in block ${claim.blockNumber} ` +
        `(${claim.blockHash}) ${where} (${reason}, tip ${head.tip}); proof_status stays verified, see GET /admin/api/alerts`,
    );
    return true;
  }

  /**
   * One `claim_unmovable` alert per claim that could not follow its transaction (stored once, whatever the
   * number of runs and workers), an error line and the metric when first stored; later runs only read again.
   */
  private async raiseUnmovable(run: Run, moves: Array<{ claim: UnsettledClaim; to: { blockNumber: number; blockHash: string; logIndex: number } }>, why: string): Promise<void> {
    const raised = await this.dataSource.transaction(async (em) => {
      const stored: UnsettledClaim[] = [];
      for (const { claim, to } of moves) {
        const details = {
          ...claimDetails(run.mode, claim),
          moved_to: { block_number: to.blockNumber, block_hash: to.blockHash, log_index: to.logIndex },
          tip: run.head.tip,
        };
        if (await this.alerts.record(em, { kind: 'claim_unmovable', requestId: claim.requestId, details })) stored.push(claim);
      }
      return stored;
    });
    for (const claim of raised) {
      this.metrics.countClaimUnmovable(run.mode);
      this.logger.error(
        `verified request ${claim.requestId}: ${claim.txHash} was re-included, and its claim (log ${claim.logIndex}) cannot follow it: ` +
          `${why}; proof_status stays verified, read again every run, see GET /admin/api/alerts`,
      );
    }
  }

  /**
   * A `claim_unmovable` alert whose claim has since settled (it moved, then sat deep enough) or been lost (its
   * own `verified_reorged` alert says so) no longer needs operators: stamped resolved. Read from what is
   * stored, at the start of every run, so a run that failed after a claim changed, or an alert stored just
   * after another worker moved its claim, is resolved by the next run all the same. Open alerts are few:
   * one short read when there are none; many stuck for good are read page by page, never holding back others.
   */
  private async resolveUnmovable(): Promise<void> {
    for (const id of await this.alerts.resolveWhere('claim_unmovable', (ids) => this.claims.closed(ids))) {
      this.logger.log(`verified request ${id}: its claim settled or was lost; its claim_unmovable alert is resolved`);
    }
  }
}

/** What an alert about a claim says of it: the request's parties and the claim as verified. */
function claimDetails(mode: Mode, claim: UnsettledClaim): Record<string, unknown> {
  return {
    mode,
    partner_id: claim.partnerId,
    merchant_id: claim.merchantId,
    chain_id: claim.chainId.toString(),
    token_address: claim.tokenAddress,
    recipient: claim.recipient,
    amount: claim.amount.toString(),
    tx_hash: claim.txHash,
    log_index: claim.logIndex,
    block_number: claim.blockNumber,
    block_hash: claim.blockHash,
  };
}
