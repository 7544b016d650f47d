import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Confirmations, Mode } from '../../../config/config';
import { isUniqueViolation } from '../../../database/pg-errors';
import { AssetRegistry } from '../../chain/asset-registry';
import type { ChainReader, ChainTransfer } from '../../chain/chain-reader';
import { NotificationsOutbox } from '../../notifications/notifications-outbox';
import { EventOutbox } from '../../webhooks/event-outbox';
import type { PaymentRequest } from '../domain/payment-request';
import { isDeepEnough } from '../domain/finality';
import { judgeTransaction, type NoPayReason } from '../domain/pay-rule';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';
import { ExpiryService } from './expiry.service';
import { PlanChargeOutcomesPort } from './plan-charge-outcomes.port';
import { readHead } from './chain-head';

export type ProofSource = 'payer' | 'chain_scan';

export type RejectReason = NoPayReason | 'transfer_already_claimed' | 'transaction_not_found';

/**
 * wait: `unknown` — the node does not know the hash (dropped, or not yet propagated): back off, it may never
 * come. The others can only change with a new block of `mode`'s chain: run again when `tip` has moved.
 */
export type VerifyOutcome =
  | { kind: 'verified'; requestId: string }
  | { kind: 'wait'; why: 'unknown' | 'not_mined' | 'confirmations' | 'reorg' | 'same_block'; mode: Mode; tip: number }
  | { kind: 'rejected'; reason: RejectReason }
  | { kind: 'moot'; why: 'missing' | 'already_verified' | 'superseded' };

/**
 * The request's mode cannot read the request's chain now: nothing about the transaction can be decided, and
 * nothing is recorded. `off`: the mode has no working chain (not configured, its node unreachable at start or
 * on another chain id), which an operator may fix; otherwise the mode reads another chain than the request's.
 */
export class ChainOff extends Error {
  constructor(message: string, readonly off: boolean) {
    super(message);
  }
}

/** What the proof pre-check (DESIGN §7, §8) saw of a submitted hash on the request's chain. */
export type ProofCheck =
  /** `logIndexes`: the transfers that pay it (exact value, token, recipient, in the window). */
  | { kind: 'pays'; logIndexes: number[] }
  | { kind: 'pending' }
  | { kind: 'unknown' }
  | { kind: 'does_not_pay'; reason: NoPayReason };

/** The request's chain cannot be read now (node down, mode not configured): the caller changes nothing. */
export class ChainUnavailable extends Error {}

/** After the claim window, plus this much clock tolerance, no transaction mined later could pay. */
const PAST_WINDOW_MS = 3600_000;

/** Whether nothing mined from now on can pay `r`: its claim window closed more than the tolerance ago. */
function pastWindow(r: PaymentRequest): boolean {
  return Date.now() > r.claimUntil.getTime() + PAST_WINDOW_MS;
}

/**
 * Verifies one transaction against one request: waits for the confirmations, re-reads the receipt and its
 * block from the canonical chain, applies the pay rule, and claims the (chain, tx, log) through the unique
 * index, writing proof_verified and the notifications it causes to their outboxes in the same transaction. Payer-submitted hashes and the
 * chain scan come through here alike. RPC failures throw (the job backs off) and change nothing.
 */
@Injectable()
export class VerificationService {
  private readonly logger = new Logger('Verification');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly assets: AssetRegistry,
    private readonly outbox: EventOutbox,
    private readonly notices: NotificationsOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly plans: PlanChargeOutcomesPort,
    private readonly expiry: ExpiryService,
  ) {}

  /**
   * The pre-check of a submitted hash, with the same pure rule as the verification but without waiting for
   * confirmations: at most three RPC calls (receipt, then the transaction or the receipt's block, then the
   * node's chain id).
   */
  async inspect(r: PaymentRequest, txHash: string): Promise<ProofCheck> {
    const mode: Mode = r.testMode ? 'test' : 'live';
    const { reader, chainId } = this.chainOf(r, (why) => new ChainUnavailable(why));
    let check: ProofCheck;
    try {
      check = await this.look(r, reader, chainId, txHash);
      // Asked after the reads the answer rests on: a node now on another chain answered for that chain.
      if (!(await this.assets.onConfiguredChain(mode))) throw new Error(`${mode} mode's node is no longer on chain ${chainId}`);
    } catch (e) {
      throw new ChainUnavailable(`chain ${chainId} did not answer: ${(e as Error).message}`);
    }
    return check;
  }

  private async look(r: PaymentRequest, reader: ChainReader, chainId: bigint, txHash: string): Promise<ProofCheck> {
    const receipt = await reader.receipt(txHash);
    if (!receipt) {
      if (!(await reader.transaction(txHash))) return { kind: 'unknown' };
      // Pending, but it can only be mined after the window: refused now, as the verification would at its
      // first look, rather than attached with a proof_attached for a payment that cannot be.
      return pastWindow(r) ? { kind: 'does_not_pay', reason: 'after_window' } : { kind: 'pending' };
    }
    const block = await reader.block(receipt.blockNumber);
    // A receipt from a block being reorged away: whether it pays is the verification's call, after confirmations.
    if (!block || block.hash !== receipt.blockHash) return { kind: 'pending' };
    const verdict = judgeTransaction(r, { chainId, receipt, blockTime: block.timestamp });
    return verdict.pays ? { kind: 'pays', logIndexes: verdict.transfers.map((t) => t.logIndex) } : { kind: 'does_not_pay', reason: verdict.reason };
  }

  /**
   * `seenTip`: the tip at this job's previous look. When the chain has not moved since, nothing a receipt
   * could tell has changed, so no receipt is read: at most one receipt call per waiting job per block,
   * however often the job is woken.
   */
  async verify(requestId: string, txHash: string, source: ProofSource, seenTip?: number): Promise<VerifyOutcome> {
    const r = await this.repo.findById(requestId);
    if (!r) return { kind: 'moot', why: 'missing' };
    if (r.proofStatus === 'verified') return { kind: 'moot', why: 'already_verified' };
    if (source === 'payer' && r.txHash !== txHash) return { kind: 'moot', why: 'superseded' };
    const mode: Mode = r.testMode ? 'test' : 'live';
    const { reader, chainId, confirmations: needed } = this.chainOf(r, (why, off) => new ChainOff(why, off));

    const tip = await reader.tip();
    if (seenTip !== undefined && tip === seenTip) return { kind: 'wait', why: 'same_block', mode, tip };
    const receipt = await reader.receipt(txHash);
    if (!receipt) {
      // Past the window plus tolerance nothing mined from now on can pay: stop looking.
      if (pastWindow(r)) {
        await this.onChain(mode, chainId);
        return this.reject(r, txHash, source, 'transaction_not_found');
      }
      // Pending (waits for a block) or unknown to the node (dropped or not propagated: backs off).
      const known = await reader.transaction(txHash);
      return { kind: 'wait', why: known ? 'not_mined' : 'unknown', mode, tip };
    }
    // N confirmations, or for `finalized` the node's finalized block (DESIGN §7); the tip is the one read above.
    const head = needed === 'finalized' ? { tip, finalized: (await reader.finalizedBlock())?.number ?? null } : { tip, finalized: null };
    if (!isDeepEnough(receipt.blockNumber, needed, head)) return { kind: 'wait', why: 'confirmations', mode, tip };
    // The receipt must sit in the block that is canonical at this height now; a reorged receipt can keep
    // "gaining" confirmations on a node that still serves it from the old branch.
    const block = await reader.block(receipt.blockNumber);
    if (!block || block.hash !== receipt.blockHash) return { kind: 'wait', why: 'reorg', mode, tip };
    await this.onChain(mode, chainId);

    const verdict = judgeTransaction(r, { chainId, receipt, blockTime: block.timestamp });
    if (!verdict.pays) return this.reject(r, txHash, source, verdict.reason);
    for (const transfer of verdict.transfers) {
      if (await this.claim(r, transfer, source)) return { kind: 'verified', requestId: r.id };
    }
    return this.reject(r, txHash, source, 'transfer_already_claimed');
  }

  /** A payer's hash the node never knew for the whole back-off: stays attached, noted, replaceable. */
  async giveUp(requestId: string, txHash: string): Promise<void> {
    await this.repo.noteRejection(requestId, txHash, 'transaction_not_found');
    this.logger.warn(`request ${requestId}: gave up on ${txHash}, unknown to the node`);
  }

  private chainOf(r: PaymentRequest, fail: (why: string, off: boolean) => Error): { reader: ChainReader; chainId: bigint; confirmations: Confirmations } {
    const mode: Mode = r.testMode ? 'test' : 'live';
    const reader = this.assets.reader(mode);
    const asset = this.assets.asset(mode);
    if (!reader || !asset) throw fail(`verification is off for ${mode} mode: ${JSON.stringify(this.assets.status(mode))}`, true);
    if (asset.chainId !== r.chainId) throw fail(`request ${r.id} is on chain ${r.chainId}, ${mode} mode reads ${asset.chainId}`, false);
    return { reader, chainId: asset.chainId, confirmations: asset.confirmations };
  }

  /**
   * Before a decision on what the node answered: the node must still be on the request's chain. Checked at start
   * only, a node restarted on another chain id (or a URL re-pointed at one) kept answering at the same address,
   * and a transfer there of the same token address, to the same wallet, of the same amount verified the request
   * (a chain hunt). After the reads, so nothing read before a switch is taken for the configured chain's.
   */
  private async onChain(mode: Mode, chainId: bigint): Promise<void> {
    if (!(await this.assets.onConfiguredChain(mode))) throw new ChainOff(`${mode} mode's node is no longer on chain ${chainId}: ${JSON.stringify(this.assets.status(mode))}`, true);
  }

  /**
   * Marks the request verified by this transfer, unless another request holds the transfer already. The
   * amount stays held until the claim window closes: a payer who pays twice must not pay the next request
   * of the same price (the second transfer is kept as unmatched instead).
   */
  private async claim(r: PaymentRequest, t: ChainTransfer, source: ProofSource): Promise<boolean> {
    try {
      const recorded = await this.dataSource.transaction(async (em) => {
        // Paid after its deadline, before the expiry was stored: stored first, so it stays expired (and a plan
        // charge counts its miss, which the payment then resets), as if the expiry job had run on time.
        await this.expiry.expireIfLapsed(em, r.id);
        if (!(await this.repo.claim(em, r.id, t, source))) return null;
        // A paid charge resets its plan's missed count to the misses after it, and may resume a plan paused for
        // unpaid (DESIGN §5).
        if (r.planId && r.periodIndex !== null) {
          const planId = r.planId;
          await this.plans.chargePaid(em, { requestId: r.id, planId, periodIndex: r.periodIndex, missedSince: () => this.repo.chargesMissedSincePaid(em, planId) });
        }
        const e = await this.outbox.record(em, { partnerId: r.partnerId, requestId: r.id, event: 'payment.proof_verified', testMode: r.testMode });
        // The receipt and the merchant's note (DESIGN §6), in the same transaction as the verification.
        const notices = await this.notices.requestVerified(em, {
          requestId: r.id, merchantId: r.merchantId, customerEmail: r.customerEmail, customerPhone: r.customerPhone,
        });
        return { eventIds: [e.id], notices };
      });
      if (recorded === null) return true; // verified meanwhile by a racing claim of the same transfer
      await Promise.all([this.afterCommit.eventsRecorded(recorded.eventIds), this.afterCommit.notificationsRecorded(recorded.notices)]);
      this.logger.log(`request ${r.id} verified by ${t.txHash}#${t.logIndex} (${source})`);
      return true;
    } catch (e) {
      if (isUniqueViolation(e, 'payment_requests_claim')) return false;
      throw e;
    }
  }

  private async reject(r: PaymentRequest, txHash: string, source: ProofSource, reason: RejectReason): Promise<VerifyOutcome> {
    // The reason is kept on the request when it concerns the hash the payer submitted.
    if (source === 'payer') await this.repo.noteRejection(r.id, txHash, reason);
    return { kind: 'rejected', reason };
  }
}
