import { Injectable } from '@nestjs/common';
import { Db, isUniqueViolation, type Queryable } from '../../../database/db';
import type { PaymentRequest } from '../domain/payment-request';
import { PROOF_TRANSITIONS, STATUS_TRANSITIONS, type ProofStatus, type RequestStatus, type StatusTrigger } from '../domain/transitions';
import { REQUEST_COLUMNS, toDomain, type RequestRow } from './request.row';

export interface NewRequest {
  id: string;
  partnerId: string;
  merchantId: string;
  testMode: boolean;
  idempotencyKey: string;
  fiatAmount: number;
  fiatCurrency: string;
  rate: string;
  baseAmount: bigint;
  chainId: bigint;
  tokenAddress: string;
  recipient: string;
  memo: string | null;
  paymentMode: 'pos' | 'service';
  customerName: string | null;
  customerEmail: string | null;
  customerPhone: string | null;
  metadata: Record<string, string>;
  expiryMinutes: number;
  graceMinutes: number;
}

export interface ListFilter {
  partnerId: string;
  testMode: boolean;
  status?: RequestStatus;
  proofStatus?: ProofStatus;
  merchantId?: string;
  since?: string;
  until?: string;
  limit: number;
  offset: number;
}

/** Statuses that expire on their own once expires_at passes (the expire rule of the transition table). */
const EXPIRING = STATUS_TRANSITIONS.expire;
const LAPSED = `(proof_status = ANY('{${EXPIRING.whenProof!.join(',')}}') AND expires_at <= now())`;

const MAX_AMOUNT_RETRIES = 20;

/**
 * The smallest amount ≥ the converted one that no open request of this merchant and asset holds (DESIGN §3):
 * the amount itself when free, else the first gap above it — an ordered index walk that stops at the first
 * gap (min() with the anti-join made Postgres scan every open amount). The partial unique index is what
 * guarantees uniqueness under races; this only picks the candidate.
 */
const AMOUNT_CANDIDATE = `
  CASE WHEN NOT EXISTS (SELECT 1 FROM payment_requests x WHERE x.merchant_id = $3 AND x.chain_id = $10 AND
                          x.token_address = $11 AND x.amount_locked AND x.amount = $9::numeric)
       THEN $9::numeric
       ELSE (SELECT t.amount + 1 FROM payment_requests t
              WHERE t.merchant_id = $3 AND t.chain_id = $10 AND t.token_address = $11 AND t.amount_locked
                AND t.amount >= $9::numeric
                AND NOT EXISTS (SELECT 1 FROM payment_requests u WHERE u.merchant_id = $3 AND u.chain_id = $10
                                 AND u.token_address = $11 AND u.amount_locked AND u.amount = t.amount + 1)
              ORDER BY t.amount LIMIT 1)
  END`;

const INSERT_SQL = `
  INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency,
    rate, amount, chain_id, token_address, recipient, memo, payment_mode, customer_name, customer_email,
    customer_phone, metadata, expires_at, claim_until)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, ${AMOUNT_CANDIDATE}, $10, $11, $12, $13, $14, $15, $16, $17, $18,
    now() + make_interval(mins => $19), now() + make_interval(mins => $19 + $20)
  -- The merchant as create saw it (possibly from a cache) must still hold, in this very statement.
  WHERE EXISTS (SELECT 1 FROM merchants m WHERE m.id = $3 AND m.partner_id = $2 AND m.test_mode = $4 AND NOT m.disabled
                  AND m.onboarding_status = 'complete' AND m.wallet_address = $12 AND m.display_currency = $7)
  ON CONFLICT ON CONSTRAINT payment_requests_idempotency DO NOTHING
  RETURNING ${REQUEST_COLUMNS}`;

@Injectable()
export class RequestsRepository {
  constructor(private readonly db: Db) {}

  /**
   * Inserts, or finds the request that already holds (partner, merchant, key). Returns created=false for the
   * existing one: 50 parallel creates with one key end in one row, and each loser reads the winner. Returns
   * null when the merchant no longer is what the caller saw (disabled, wallet or currency changed meanwhile).
   */
  async insertOrFind(n: NewRequest): Promise<{ request: PaymentRequest; created: boolean } | null> {
    const params = [n.id, n.partnerId, n.merchantId, n.testMode, n.idempotencyKey, n.fiatAmount, n.fiatCurrency,
      n.rate, n.baseAmount.toString(), n.chainId.toString(), n.tokenAddress, n.recipient, n.memo, n.paymentMode,
      n.customerName, n.customerEmail, n.customerPhone, JSON.stringify(n.metadata), n.expiryMinutes, n.graceMinutes];
    for (let attempt = 0; ; attempt++) {
      try {
        const [row] = await this.db.query<RequestRow>(INSERT_SQL, params, 'request_insert');
        if (row) return { request: toDomain(row), created: true };
        const existing = await this.findByKey(n.partnerId, n.merchantId, n.idempotencyKey);
        if (existing) return { request: existing, created: false };
        return null;
      } catch (e) {
        // Another create took the same candidate amount a moment earlier: pick again.
        if (!isUniqueViolation(e, 'payment_requests_open_amount') || attempt >= MAX_AMOUNT_RETRIES) throw e;
      }
    }
  }

  async findByKey(partnerId: string, merchantId: string, key: string): Promise<PaymentRequest | null> {
    const [row] = await this.db.query<RequestRow>(
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE partner_id = $1 AND merchant_id = $2 AND idempotency_key = $3`,
      [partnerId, merchantId, key],
      'request_by_key',
    );
    return row ? toDomain(row) : null;
  }

  async findOwned(partnerId: string, testMode: boolean, id: string): Promise<PaymentRequest | null> {
    const [row] = await this.db.query<RequestRow>(
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE id = $1 AND partner_id = $2 AND test_mode = $3`,
      [id, partnerId, testMode],
      'request_owned',
    );
    return row ? toDomain(row) : null;
  }

  async findById(q: Queryable, id: string, forUpdate = false): Promise<PaymentRequest | null> {
    const [row] = await q.query<RequestRow>(
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return row ? toDomain(row) : null;
  }

  async list(f: ListFilter): Promise<{ items: PaymentRequest[]; hasMore: boolean }> {
    const params: unknown[] = [f.partnerId, f.testMode];
    const where = ['partner_id = $1', 'test_mode = $2'];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.status) where.push(statusCondition(f.status));
    if (f.proofStatus) add('proof_status = ?', f.proofStatus);
    if (f.merchantId) add('merchant_id = ?', f.merchantId);
    if (f.since) add('created_at >= ?::timestamptz', f.since);
    if (f.until) add('created_at < ?::timestamptz', f.until);
    params.push(f.limit + 1, f.offset);
    const rows = await this.db.query<RequestRow>(
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE ${where.join(' AND ')}
        ORDER BY created_at, id LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return { items: rows.slice(0, f.limit).map(toDomain), hasMore: rows.length > f.limit };
  }

  /** Every lapsed request (no proof, past expires_at) becomes expired; returns how many did. */
  async expireLapsed(limit = 1000): Promise<number> {
    const rule = STATUS_TRANSITIONS.expire;
    const rows = await this.db.query(
      `UPDATE payment_requests SET status = $1, expired_at = now(), updated_at = now()
        WHERE id IN (SELECT id FROM payment_requests
                      WHERE status = ANY($2) AND proof_status = ANY($3) AND expires_at <= now() LIMIT $4)
          AND status = ANY($2) AND proof_status = ANY($3)
        RETURNING id`,
      [rule.to, rule.from, rule.whenProof, limit],
    );
    return rows.length;
  }

  /**
   * Frees the amounts of requests whose claim window has closed *as the chain scan sees it*: the scan has
   * handled a block stamped after claim_until (plus the 60 s of clock tolerance), so no unseen transfer can
   * still pay them. Released on the wall clock instead, a payment mined near the end of the window but
   * scanned after it would find no open request, or the next request of the same price.
   */
  async releaseClosedAmounts(): Promise<number> {
    const rows = await this.db.query(
      `UPDATE payment_requests r SET amount_locked = false
         FROM chain_cursors c
        WHERE r.amount_locked AND c.chain_id = r.chain_id AND c.token_address = r.token_address
          AND c.last_block_time > r.claim_until + interval '60 seconds'
        RETURNING r.id`,
    );
    return rows.length;
  }

  /**
   * Applies a status trigger as one conditional UPDATE built from the transition table, so two racing
   * writers (cancel against expiry against open) cannot both win. Returns the updated request, or null when
   * the request was not in a state the trigger applies to.
   */
  async applyStatus(q: Queryable, id: string, trigger: StatusTrigger, scope?: { partnerId: string; testMode: boolean }): Promise<PaymentRequest | null> {
    const rule = STATUS_TRANSITIONS[trigger];
    const params: unknown[] = [id, rule.to, rule.from];
    const where = ['id = $1', 'status = ANY($3)'];
    if (rule.whenProof) {
      params.push(rule.whenProof);
      where.push(`proof_status = ANY($${params.length})`);
    }
    // Open and cancel need a live request; expiry needs a lapsed one.
    where.push(trigger === 'expire' ? 'expires_at <= now()' : 'expires_at > now()');
    if (scope) {
      params.push(scope.partnerId, scope.testMode);
      where.push(`partner_id = $${params.length - 1}`, `test_mode = $${params.length}`);
    }
    const stamp = { open: 'opened_at', cancel: 'voided_at', expire: 'expired_at' }[trigger];
    const [row] = await q.query<RequestRow>(
      `UPDATE payment_requests SET status = $2, ${stamp} = now(), updated_at = now()
        WHERE ${where.join(' AND ')} RETURNING ${REQUEST_COLUMNS}`,
      params,
    );
    return row ? toDomain(row) : null;
  }
}

/** The proof_status values a verification may start from (the verify rule of the table). */
export const VERIFIABLE_FROM = PROOF_TRANSITIONS.verify.from;

/** A status filter as shown to partners: a lapsed request with no proof reads as expired. */
function statusCondition(status: RequestStatus): string {
  switch (status) {
    case 'expired':
      return `(status = 'expired' OR (status = ANY('{${EXPIRING.from.join(',')}}') AND ${LAPSED}))`;
    case 'requested':
    case 'opened':
      return `(status = '${status}' AND NOT ${LAPSED})`;
    case 'voided':
      return `status = 'voided'`;
  }
}
