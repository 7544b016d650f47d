import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../../../common/errors';
import { retryingDeadlocks } from '../../../database/pg-errors';
import { assetId } from '../../chain/asset-id';
import { AssetRegistry } from '../../chain/asset-registry';
import { MerchantGate } from '../../merchants/merchant-gate.service';
import { EventOutbox } from '../../webhooks/event-outbox';
import type { PaymentRequest } from '../domain/payment-request';
import { effectiveStatus, nextProofStatus, proofReplaceable, type ProofStatus, type RequestStatus } from '../domain/transitions';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';
import { ExpiryService } from './expiry.service';
import { ChainUnavailable, VerificationService } from './verification.service';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** Runs of the proof's transaction Postgres rolled back to end a deadlock (see submitProof). */
const PROOF_DEADLOCK_ATTEMPTS = 3;

/** EIP-681: a transfer of exactly `amount` base units of the token to the recipient, on the chain. */
export function paymentUri(r: PaymentRequest): string {
  return `ethereum:${r.tokenAddress}@${r.chainId}/transfer?address=${r.recipient}&uint256=${r.amount}`;
}

/** What the pay page and its JSON API show of a request (DESIGN §4). */
export interface PayView {
  request_id: string;
  status: RequestStatus;
  proof_status: ProofStatus;
  merchant_name: string | null;
  fiat_amount: number;
  fiat_currency: string;
  amount: string;
  asset_id: string;
  token_symbol: string | null;
  token_decimals: number | null;
  chain_id: string;
  recipient: string;
  expires_at: string;
  memo: string | null;
  payment_uri: string;
  tx_hash: string | null;
  /** Why the attached hash is known not to pay (a pay-rule reason or transaction_not_found), else null. */
  proof_note: string | null;
  test_mode: boolean;
}

/** The payer's side of a request (DESIGN §4 pay page API): what to pay, the open report, the proof. */
@Injectable()
export class PayService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly assets: AssetRegistry,
    private readonly merchants: MerchantGate,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly verification: VerificationService,
    private readonly expiry: ExpiryService,
  ) {}

  async view(id: string): Promise<PayView> {
    const r = await this.load(id);
    // The request's own token, not the mode's current one: after the mode moves to another token, a payer
    // told the new symbol or decimals would pay the wrong token, or a wrong amount.
    const [merchantName, stored] = await Promise.all([
      this.merchants.payeeName(r.merchantId),
      this.assets.tokenOf(r.chainId, r.tokenAddress),
    ]);
    return {
      request_id: r.id,
      status: effectiveStatus(r, new Date()),
      proof_status: r.proofStatus,
      merchant_name: merchantName,
      fiat_amount: r.fiatAmount,
      fiat_currency: r.fiatCurrency,
      amount: r.amount.toString(),
      asset_id: assetId(r.chainId, r.tokenAddress),
      token_symbol: stored?.symbol ?? null,
      token_decimals: stored?.decimals ?? null,
      chain_id: r.chainId.toString(),
      recipient: r.recipient,
      expires_at: r.expiresAt.toISOString(),
      // A handle request's memo is its visitor's note to the merchant: shown on the merchant's pages only, never
      // under the merchant's name here, where anyone could write "send the payment to 0x… instead" and share
      // the link.
      memo: r.source === 'handle' ? null : r.memo,
      payment_uri: paymentUri(r),
      tx_hash: r.txHash,
      proof_note: r.proofStatus === 'attached' ? r.verifyNote : null,
      test_mode: r.testMode,
    };
  }

  /** The page's script reports the open; a bare GET of the page never does (link-preview bots). */
  async open(id: string): Promise<PayView> {
    await this.load(id);
    await this.repo.applyStatus(id, 'open');
    return this.view(id);
  }

  /**
   * DESIGN §7 and §8, in this order: malformed; claimed by another request; the same hash again (no-op);
   * the chain unreachable; unknown to the node; mined and not paying; another attached hash that may still
   * pay. Only then none → attached (payment.proof_attached) or a replacement of an attached hash known not to
   * pay (no second event). Every refusal changes nothing. Accepted whatever the status: a payer who paid a
   * voided or expired request must be able to prove it.
   */
  async submitProof(id: string, rawHash: unknown): Promise<PayView> {
    if (typeof rawHash !== 'string' || !TX_HASH.test(rawHash)) {
      throw new AppError('invalid_tx_hash', { errors: [{ field: 'tx_hash', message: 'tx_hash must be 0x plus 64 hex characters' }] });
    }
    const txHash = rawHash.toLowerCase();
    const r = await this.load(id);
    // A hash another request was verified by is refused, unless a transfer of the transaction pays this request
    // and no other request holds it: a transfer is claimed, not a hash (DESIGN §3), and one batch payment may pay
    // several requests. Without a look at the chain (unreachable), it is refused as before.
    const claimedElsewhere = await this.repo.verifiedElsewhere(r.chainId, txHash, r.id);
    const lookFirst = claimedElsewhere ? await this.verification.inspect(r, txHash).catch(() => null) : undefined;
    if (claimedElsewhere) {
      const taken = await this.repo.claimedLogsElsewhere(r.chainId, txHash, r.id);
      const ownTransfer = lookFirst?.kind === 'pays' && lookFirst.logIndexes.some((i) => !taken.has(i));
      if (!ownTransfer) throw new AppError('tx_hash_already_used');
    }
    if (r.txHash === txHash) {
      // Re-queued while a look may still find something: no verdict yet (a lost job is re-created; the
      // deterministic job id keeps it single), or transaction_not_found (unknown to the node through the whole
      // back-off, and a wallet re-sending it sends the same hash; or still unmined an hour past the window, which
      // a new look refuses again at once). A mined transaction's verdict stands: submitting it again costs no look.
      if (r.proofStatus === 'attached' && (r.verifyNote === null || r.verifyNote === 'transaction_not_found')) {
        await this.afterCommit.verificationRequested(id, txHash, r.claimUntil);
      }
      return this.view(id);
    }
    // Outside the transaction: no row lock is held across RPC calls.
    const check = lookFirst ?? (await this.verification.inspect(r, txHash).catch((e: unknown) => {
      if (e instanceof ChainUnavailable) throw new AppError('chain_unavailable');
      throw e;
    }));
    switch (check.kind) {
      case 'unknown':
        throw new AppError('tx_not_found');
      case 'does_not_pay':
        throw new AppError('tx_does_not_pay', { reason: check.reason });
      case 'pending':
      case 'pays':
        break;
    }
    // A plan charge's lapsed expiry, stored here, counts a miss on its plan: charge, then plan. The plan's
    // scheduler and its test clock lock plan, then charge; Postgres ends such a deadlock by undoing one side,
    // and it is run again here rather than answered with a 500.
    const result = await retryingDeadlocks(PROOF_DEADLOCK_ATTEMPTS, () => this.dataSource.transaction(async (em) => {
      const current = (await this.repo.findById(id, { em, forUpdate: true }))!;
      if (current.txHash === txHash) return { eventIds: [] as string[], queue: current.proofStatus === 'attached' };
      if (current.proofStatus === 'verified') {
        throw new AppError('conflict', { errors: [{ field: 'tx_hash', message: 'this request is already paid by another transaction' }] });
      }
      if (current.proofStatus === 'attached' && !proofReplaceable(current)) throw new AppError('proof_already_attached');
      const attaching = nextProofStatus(current, 'attach') !== null;
      await this.expiry.expireIfLapsed(em, id);
      if (!(await this.repo.attachProof(em, id, txHash))) throw new AppError('proof_already_attached');
      if (!attaching) return { eventIds: [], queue: true };
      const e = await this.outbox.record(em, { partnerId: current.partnerId, requestId: id, event: 'payment.proof_attached', testMode: current.testMode });
      return { eventIds: [e.id], queue: true };
    }));
    // Side by side: each waits at most AFTER_COMMIT_WAIT_MS for Redis, so the answer waits that long at most.
    await Promise.all([
      result.eventIds.length ? this.afterCommit.eventsRecorded(result.eventIds) : undefined,
      result.queue ? this.afterCommit.verificationRequested(id, txHash, r.claimUntil) : undefined,
    ]);
    return this.view(id);
  }

  private async load(id: string): Promise<PaymentRequest> {
    const r = await this.repo.findById(id);
    if (!r) throw AppError.notFound();
    return r;
  }
}
