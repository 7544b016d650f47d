import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { AppError } from '../../../common/errors';
import { iso } from '../../../common/time';
import { Db, type Queryable } from '../../../database/db';
import { AssetRegistry } from '../../chain/asset-registry';
import { EventOutbox } from '../../webhooks/event-outbox';
import { assetId, type PaymentRequest } from '../domain/payment-request';
import { effectiveStatus, nextProofStatus } from '../domain/transitions';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** EIP-681: a transfer of exactly `amount` base units of the token to the recipient, on the chain. */
export function paymentUri(r: PaymentRequest): string {
  return `ethereum:${r.tokenAddress}@${r.chainId}/transfer?address=${r.recipient}&uint256=${r.amount}`;
}

/** The payer's side of a request (DESIGN §4 pay page API): what to pay, the open report, the proof. */
@Injectable()
export class PayService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly repo: RequestsRepository,
    private readonly assets: AssetRegistry,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
  ) {}

  async view(id: string): Promise<Record<string, unknown>> {
    const r = await this.load(id);
    const [m] = await this.db.query<{ display_name: string | null; business_name: string | null }>(
      `SELECT display_name, business_name FROM merchants WHERE id = $1`,
      [r.merchantId],
    );
    const asset = this.assets.asset(r.testMode ? 'test' : 'live');
    const [stored] = asset
      ? [asset]
      : await this.db.query<{ symbol: string; decimals: number }>(
          `SELECT symbol, decimals FROM assets WHERE chain_id = $1 AND token_address = $2`,
          [r.chainId.toString(), r.tokenAddress],
        );
    return {
      ok: true,
      request_id: r.id,
      status: effectiveStatus(r, r.expiresAt, new Date()),
      proof_status: r.proofStatus,
      merchant_name: m?.display_name ?? m?.business_name ?? null,
      fiat_amount: r.fiatAmount,
      fiat_currency: r.fiatCurrency,
      amount: r.amount.toString(),
      asset_id: assetId(r.chainId, r.tokenAddress),
      token_symbol: stored?.symbol ?? null,
      token_decimals: stored?.decimals ?? null,
      chain_id: r.chainId.toString(),
      recipient: r.recipient,
      expires_at: iso(r.expiresAt),
      memo: r.memo,
      payment_uri: paymentUri(r),
      tx_hash: r.txHash,
      test_mode: r.testMode,
    };
  }

  /** The page's script reports the open; a bare GET of the page never does (link-preview bots). */
  async open(id: string): Promise<Record<string, unknown>> {
    await this.load(id);
    await this.repo.applyStatus(this.db, id, 'open');
    return this.view(id);
  }

  /**
   * none → attached with payment.proof_attached; the same hash again is a no-op; another hash while not
   * verified replaces it without a second event. Accepted whatever the status: a payer who paid a voided
   * or expired request must be able to prove it.
   */
  async submitProof(id: string, rawHash: unknown): Promise<Record<string, unknown>> {
    if (typeof rawHash !== 'string' || !TX_HASH.test(rawHash)) {
      throw new AppError('invalid_tx_hash', { errors: [{ field: 'tx_hash', message: 'tx_hash must be 0x plus 64 hex characters' }] });
    }
    const txHash = rawHash.toLowerCase();
    const r = await this.load(id);
    const [claimedElsewhere] = await this.db.query(
      `SELECT 1 FROM payment_requests WHERE chain_id = $1 AND tx_hash = $2 AND proof_status = 'verified' AND id <> $3 LIMIT 1`,
      [r.chainId.toString(), txHash, r.id],
    );
    if (claimedElsewhere) throw new AppError('tx_hash_already_used');
    const result = await this.db.dataSource.transaction(async (em) => {
      // Minimal bridge until the requests module moves to TypeORM: EventOutbox.record takes the EntityManager
      // (structured result: rows for UPDATE … RETURNING too).
      const tx: Queryable = { query: async (sql, params) => (await em.queryRunner!.query(sql, params, true)).records };
      const current = (await this.repo.findById(tx, id, true))!;
      if (current.proofStatus === 'verified') {
        if (current.txHash === txHash) return { eventIds: [] as string[], queue: false };
        throw new AppError('conflict', { errors: [{ field: 'tx_hash', message: 'this request is already paid by another transaction' }] });
      }
      if (current.txHash === txHash) return { eventIds: [], queue: true };
      const attaching = nextProofStatus(current, 'attach') !== null;
      await tx.query(
        `UPDATE payment_requests SET proof_status = 'attached', tx_hash = $2, proof_source = 'payer', verify_note = NULL,
                proof_attached_at = COALESCE(proof_attached_at, now()), updated_at = now() WHERE id = $1`,
        [id, txHash],
      );
      if (!attaching) return { eventIds: [], queue: true };
      const e = await this.outbox.record(em, { partnerId: current.partnerId, requestId: id, event: 'payment.proof_attached', testMode: current.testMode });
      return { eventIds: [e.id], queue: true };
    });
    if (result.eventIds.length) await this.afterCommit.eventsRecorded(result.eventIds);
    if (result.queue) await this.afterCommit.verificationRequested(id, txHash);
    return this.view(id);
  }

  private async load(id: string): Promise<PaymentRequest> {
    const r = await this.repo.findById(this.db, id);
    if (!r) throw AppError.notFound();
    return r;
  }
}
