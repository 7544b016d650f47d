import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { MODES, type Mode } from '../../../config/config';
import { AlertsService } from '../../alerts/alerts.service';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainReader, ChainReceipt } from '../../chain/chain-reader';
import { isUniqueViolation } from '../../../database/pg-errors';
import { MetricsService } from '../../ops/metrics.service';
import { claimStanding, deepThrough, isDeepEnough, settleDepth, type ChainHead, type ClaimStanding, type VanishedReason } from '../domain/finality';
import { ClaimFinalityRepository, type UnsettledClaim } from '../infrastructure/claim-finality.repository';
import { readHead } from './chain-head';

/** Claims re-read per mode and run; the rest wait for the next run. */
const BATCH = 200;

export interface SettleReport {
  settled: number;
  moved: number;
  lost: number;
}

/**
 * DESIGN §7 "Finality": a verified claim is re-read until it is twice the confirmation depth deep (or, with
 * `finalized`, until its block is finalized). Still there: settled, never read again. Re-included in
 * another block: it follows the transaction there and waits for that block's depth. Gone: an alert (error
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
    const head = await readHead(reader, required);
    // Every token of the chain, not only the mode's token now: a claim in a token the mode was moved away
    // from must still be re-read until settled.
    const due = await this.claims.due(asset.chainId, mode === 'test', deepThrough(required, head), BATCH);
    const seen = new Set<string>();
    for (const first of due) {
      if (seen.has(first.txHash)) continue;
      seen.add(first.txHash);
      // The transaction's claims together (one unless it paid several requests): a reorg moves them together.
      const claims = await this.claims.ofTransaction(asset.chainId, mode === 'test', first.txHash);
      const standings = await this.standings(reader, claims);
      // The vanished first: their alerts never wait on the others' move, and a lost claim lets go of its log
      // index (its alert keeps it), which a moved sibling may need (a batch re-included without one transfer).
      const lost: string[] = [];
      for (const { claim, standing } of standings) {
        if (standing.kind !== 'vanished') continue;
        if (await this.raise(mode, claim, standing.reason, head)) report.lost++;
        lost.push(claim.requestId);
      }
      const moved = standings.flatMap(({ claim, standing }) => (standing.kind === 'moved' ? [{ id: claim.requestId, ...standing }] : []));
      let movedIds: Set<string>;
      try {
        movedIds = new Set(await this.claims.moveTogether(moved, lost));
      } catch (e) {
        // A claim outside this transaction's unsettled ones (settled, or of the other mode) still holds an index
        // the move needs: this transaction waits, and every other claim of the mode is still re-read.
        if (!isUniqueViolation(e)) throw e;
        this.logger.error(`claims of ${first.txHash} cannot follow it to block ${moved[0]?.blockNumber}: ${(e as Error).message}; read again next run`);
        continue;
      }
      report.moved += movedIds.size;
      for (const { claim, standing } of standings) {
        if (standing.kind === 'vanished') continue;
        if (standing.kind === 'moved') {
          if (!movedIds.has(claim.requestId)) continue; // settled or lost meanwhile by another worker
          this.logger.warn(`request ${claim.requestId}: ${claim.txHash}#${claim.logIndex} moved to block ${standing.blockNumber}#${standing.logIndex} (was ${claim.blockNumber})`);
        }
        if (isDeepEnough(standing.blockNumber, required, head) && (await this.claims.settle(claim.requestId, standing.blockNumber, standing.blockHash))) {
          report.settled++;
        }
      }
    }
    return report;
  }

  /** Where each claim of one transaction stands now; the receipt is read once, and only if a block changed. */
  private async standings(reader: ChainReader, claims: UnsettledClaim[]): Promise<Array<{ claim: UnsettledClaim; standing: ClaimStanding }>> {
    const blocks = new Map<number, { hash: string } | null>();
    let read: { receipt: ChainReceipt | null; receiptBlock: { hash: string } | null } | undefined;
    const out: Array<{ claim: UnsettledClaim; standing: ClaimStanding }> = [];
    for (const claim of claims) {
      let blockAtClaim: { hash: string } | null = null;
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

  private async raise(mode: Mode, claim: UnsettledClaim, reason: VanishedReason, head: ChainHead): Promise<boolean> {
    const details = {
      mode,
      reason,
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
      tip: head.tip,
      finalized: head.finalized,
    };
    const raised = await this.dataSource.transaction(async (em) => {
      if (!(await this.claims.markLost(em, claim.requestId))) return false;
      await this.alerts.record(em, { kind: 'verified_reorged', requestId: claim.requestId, details });
      return true;
    });
    if (!raised) return false;
    this.metrics.countVerifiedReorged(mode);
    this.logger.error(
      `verified request ${claim.requestId} lost its payment: ${claim.txHash}#${claim.logIndex} in block ${claim.blockNumber} ` +
        `(${claim.blockHash}) is no longer on the canonical chain (${reason}, tip ${head.tip}); proof_status stays verified, see GET /admin/api/alerts`,
    );
    return true;
  }
}
