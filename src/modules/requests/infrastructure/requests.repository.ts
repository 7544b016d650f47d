import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import type { PaymentRequest, RequestSource } from '../domain/payment-request';
import {
  LAPSES_AT, PROOF_STATUSES, PROOF_TRANSITIONS, REQUEST_STATUSES, STATUS_TRANSITIONS,
  type LapsingProof, type ProofStatus, type RequestStatus, type StatusTrigger,
} from '../domain/transitions';
import { isCheckViolation } from '../../../database/pg-errors';
import { preparedQuery } from '../../../database/prepared';
import { checkIn, oneOf } from '../../../database/state-test';
import { PaymentRequestEntity } from './payment-request.entity';
import { entityToDomain, REQUEST_COLUMNS, rowToDomain, type RequestRow } from './request.row';

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
  /** null for dashboard and handle requests (stored as SQL NULL, never as JSON null). */
  metadata: Record<string, string> | null;
  source: RequestSource;
  planId: string | null;
  periodIndex: number | null;
  /** The partner API key making the create (its insert fails once the key is revoked); null elsewhere. */
  apiKeyId: string | null;
  expiryMinutes: number;
  graceMinutes: number;
}

export interface ListFilter {
  partnerId: string;
  testMode: boolean;
  status?: RequestStatus;
  proofStatus?: ProofStatus;
  merchantId?: string;
  source?: RequestSource;
  planId?: string;
  since?: string;
  until?: string;
  /** Keyset: only rows after this one in list order (an export's next batch). */
  after?: { createdAt: Date; id: string };
  limit: number;
  offset: number;
}

export interface ClaimedTransfer {
  txHash: string;
  logIndex: number;
  from: string;
  /** Where the log was when verified: the finality job re-reads it there (DESIGN §7). */
  blockNumber: number;
  blockHash: string;
}

/** Statuses that expire on their own (the expire rule of the transition table), each proof state at its deadline. */
const EXPIRING = STATUS_TRANSITIONS.expire;
const DEADLINE_COLUMN = { expiresAt: 'expires_at', claimUntil: 'claim_until' } as const;
const LAPSED = `(${(EXPIRING.whenProof as readonly LapsingProof[])
  .map((p) => `(proof_status = '${p}' AND ${DEADLINE_COLUMN[LAPSES_AT[p]]} <= now())`)
  .join(' OR ')})`;

/** The proof_status values a verification may start from (the verify rule of the table). */
const VERIFIABLE_FROM = PROOF_TRANSITIONS.verify.from;

const MAX_AMOUNT_RETRIES = 20;
/** Amounts one statement of the sweep frees per asset at most (one transaction each; the sweep runs them all). */
const RELEASE_BATCH = 5000;

/**
 * The smallest amount ≥ the converted one that no open request of this merchant and asset holds (DESIGN §3):
 * the amount itself when free, else the first held amount from it up whose next amount is free, plus one: the
 * merchant's held amounts read in order on payment_requests_open_amount, each probed for its next on the same
 * index, stopping at the first free one. The probe is a subquery of its own (OFFSET 0), so Postgres cannot make
 * it an anti-join: with statistics that counted few held amounts (a merchant new since the last ANALYZE) the
 * anti-join read the merchant's every held amount per step (a run of 300 took 9.9 s, a review's scratch test).
 * Its cost is the run of consecutive held amounts at the converted one, a probe each: 270–290 ms for a run of
 * 100,000 (a till selling one price, never that many open at once), where comparing each with the next by a
 * window function took 81–100 ms. But that window function was planned as a scan and sort of every amount the
 * merchant holds from the converted one up whenever the statistics counted many (a subquery with a window
 * function is planned for all its rows): 37–67 ms per held amount at 60,000–77,000 open requests, growing with
 * them, so creates at random amounts slowed run over run in `npm run bench` (1,511 to 602 a second in six runs,
 * 2026-11-29); this reads two index entries when the next amount is free. The partial unique index is what
 * guarantees uniqueness under races; this only picks the candidate.
 */
const AMOUNT_CANDIDATE = `
  CASE WHEN NOT EXISTS (SELECT 1 FROM payment_requests x WHERE x.merchant_id = $3 AND x.chain_id = $10 AND
                          x.token_address = $11 AND x.amount_locked AND x.amount = $9::numeric)
       THEN $9::numeric
       ELSE (SELECT t.amount + 1 FROM payment_requests t
              WHERE t.merchant_id = $3 AND t.chain_id = $10 AND t.token_address = $11 AND t.amount_locked
                AND t.amount >= $9::numeric
                AND NOT EXISTS (SELECT 1 FROM payment_requests u WHERE u.merchant_id = $3 AND u.chain_id = $10 AND
                                  u.token_address = $11 AND u.amount_locked AND u.amount = t.amount + 1 OFFSET 0)
              ORDER BY t.amount LIMIT 1)
  END`;

/**
 * No conflict target: a taken idempotency key and a taken amount (the partial unique index, which a racing
 * create may have filled since the candidate was picked) both end in no row instead of an error, so the
 * caller's transaction stays usable and the repository tells the two apart by reading the key. Parameters are
 * numbered by hand and AMOUNT_CANDIDATE reads $3, $9, $10 and $11: append new columns last.
 */
const insertAt = (amount: string) => `
  INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency,
    rate, amount, chain_id, token_address, recipient, memo, payment_mode, customer_name, customer_email,
    customer_phone, metadata, expires_at, claim_until, source, plan_id, period_index, api_key_id)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${amount}, $10, $11, $12, $13, $14, $15, $16, $17, $18,
    now() + make_interval(mins => $19), now() + make_interval(mins => $19 + $20), $21, $22, $23, $24)
  ON CONFLICT DO NOTHING
  RETURNING ${REQUEST_COLUMNS}`;

/**
 * A create's first try: the converted amount itself, which DESIGN §3 takes when no open request holds it
 * (the partial unique index refuses it otherwise: no row). Plain VALUES, so Postgres plans it once per
 * connection (a generic plan). With the candidate search in it, Postgres planned the INSERT again on every
 * create (the search's generic plan reads every held amount, its custom plans walk the index from the
 * converted one): 0.65 ms of Postgres CPU per create against 0.34 ms this way (2026-11-27, 1,500 sequential
 * inserts each, three runs). The price: where the converted amount is held (a till selling one price) or
 * the key taken (a replay), the first try is one more statement, about 0.15 ms of Postgres CPU, before
 * the search.
 */
const INSERT_AT_CONVERTED_SQL = insertAt('$9::numeric');
/** The tries after it: the first free amount from the converted one up (a held amount, a racing create). */
const INSERT_SQL = insertAt(AMOUNT_CANDIDATE);

const STAMP: Record<StatusTrigger, keyof PaymentRequestEntity> = { open: 'openedAt', cancel: 'voidedAt', expire: 'expiredAt' };

/** The partner API key making a create was revoked after the guard let the call in (payment_requests_key_live). */
export class KeyRevoked extends Error {
  constructor() {
    super('the API key was revoked');
  }
}

/** payment_requests: the only place that reads or writes it. Returns domain requests, never entities. */
@Injectable()
export class RequestsRepository {
  constructor(@InjectRepository(PaymentRequestEntity) private readonly requests: Repository<PaymentRequestEntity>) {}

  private repo(em?: EntityManager): Repository<PaymentRequestEntity> {
    return em ? em.getRepository(PaymentRequestEntity) : this.requests;
  }

  /**
   * Inserts, or finds the request that already holds (partner, merchant, key). Returns created=false for the
   * existing one: 50 parallel creates with one key end in one row, and each loser reads the winner. Returns
   * null when the merchant no longer is what the caller saw (the payment_requests_merchant_holds rule of the
   * schema refused the row: disabled, not onboarded, or wallet or currency changed since the caller's read).
   * Inside a transaction (a plan's charge) the insert runs under a savepoint, so a refusal leaves the caller's
   * transaction usable: for the replay read here, and for the caller to decide again.
   */
  async insertOrFind(n: NewRequest, em: EntityManager = this.requests.manager): Promise<{ request: PaymentRequest; created: boolean } | null> {
    const params = [n.id, n.partnerId, n.merchantId, n.testMode, n.idempotencyKey, n.fiatAmount, n.fiatCurrency,
      n.rate, n.baseAmount.toString(), n.chainId.toString(), n.tokenAddress, n.recipient, n.memo, n.paymentMode,
      n.customerName, n.customerEmail, n.customerPhone, n.metadata === null ? null : JSON.stringify(n.metadata), n.expiryMinutes,
      n.graceMinutes, n.source, n.planId, n.periodIndex, n.apiKeyId];
    for (let attempt = 0; ; attempt++) {
      let row: RequestRow | undefined;
      try {
        if (attempt === 0) {
          const insert = () => preparedQuery<RequestRow>(em, 'request_insert_converted', INSERT_AT_CONVERTED_SQL, params);
          [row] = em.queryRunner?.isTransactionActive ? await underSavepoint(em, insert) : await insert();
        } else {
          [row] = await this.searchAndInsert(em, n.merchantId, params, attempt > 1);
        }
      } catch (e) {
        // Revoked since the guard let the call in (payment_requests_key_live, migration 1764000403100).
        if (isCheckViolation(e, 'payment_requests_key_live')) throw new KeyRevoked();
        if (!isCheckViolation(e, 'payment_requests_merchant_holds')) throw e;
        // An idempotent replay still returns the original (DESIGN §3), whatever the merchant is now.
        const replay = await this.findByKey(n.partnerId, n.merchantId, n.idempotencyKey, em);
        return replay ? { request: replay, created: false } : null;
      }
      if (row) return { request: rowToDomain(row), created: true };
      // The converted amount held, or the key taken: the search next, which tells the two apart after it.
      if (attempt === 0) continue;
      const existing = await this.findByKey(n.partnerId, n.merchantId, n.idempotencyKey, em);
      if (existing) return { request: existing, created: false };
      // Another create took the same candidate amount a moment earlier: pick again (a new snapshot sees it),
      // from now on in turn with the merchant's other losers. MAX_AMOUNT_RETRIES searches after the first try.
      if (attempt > MAX_AMOUNT_RETRIES) throw new Error(`no free amount for merchant ${n.merchantId} after ${attempt + 1} tries`);
    }
  }

  /**
   * The candidate search and its INSERT. Creates racing for one price all pick the same first gap and one of
   * them wins it, so of k racing, the last would lose k - 1 times, and past MAX_AMOUNT_RETRIES fail (a 500).
   * `inTurn`, after a lost search, holds the merchant's amount lock for the try (until the end of em's
   * transaction when there is one, a plan's charge): the losers then take the gaps one after the other, each
   * seeing the one before, and only a create on its first search can still take a gap from them. Where
   * nothing races the lock is never taken; where it is, it costs one transaction per try.
   */
  private async searchAndInsert(em: EntityManager, merchantId: string, params: unknown[], inTurn: boolean): Promise<RequestRow[]> {
    const insert = (on: EntityManager) => preparedQuery<RequestRow>(on, 'request_insert_search', INSERT_SQL, params);
    const lock = (on: EntityManager) =>
      on.query(`SELECT pg_advisory_xact_lock(hashtext('payment_requests.amount'), hashtext($1))`, [merchantId]);
    if (em.queryRunner?.isTransactionActive) {
      if (inTurn) await lock(em);
      return underSavepoint(em, () => insert(em));
    }
    if (!inTurn) return insert(em);
    return em.transaction(async (tx) => {
      await lock(tx);
      return insert(tx);
    });
  }

  async findByKey(partnerId: string, merchantId: string, idempotencyKey: string, em?: EntityManager): Promise<PaymentRequest | null> {
    const e = await this.repo(em).findOneBy({ partnerId, merchantId, idempotencyKey });
    return e ? entityToDomain(e) : null;
  }

  /**
   * The get path. Hand-written: with findOneBy the bench's get ratio was 0.19 of the bare SELECT, with this
   * statement 0.27 (npm run bench, 3 × 5 s, same machine and hour; entity hydration is the difference).
   * Prepared once per connection, as the create's first INSERT (see preparedQuery()).
   */
  async findOwned(partnerId: string, testMode: boolean, id: string): Promise<PaymentRequest | null> {
    const [row] = await preparedQuery<RequestRow>(
      this.requests.manager,
      'request_owned',
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE id = $1 AND partner_id = $2 AND test_mode = $3`,
      [id, partnerId, testMode],
    );
    return row ? rowToDomain(row) : null;
  }

  /** forUpdate needs em's transaction: the row stays locked until it ends. */
  async findById(id: string, opts: { em?: EntityManager; forUpdate?: boolean } = {}): Promise<PaymentRequest | null> {
    const e = await this.repo(opts.em).findOne({ where: { id }, lock: opts.forUpdate ? { mode: 'pessimistic_write' } : undefined });
    return e ? entityToDomain(e) : null;
  }

  /**
   * The request, and whether finality lost its verified claim (its transfer vanished, or pays it no more): one
   * read. With `share` (em's transaction), read FOR SHARE: a change to the request waits for that transaction.
   */
  async findWithClaimLost(id: string, opts: { em?: EntityManager; share?: boolean } = {}): Promise<{ request: PaymentRequest; claimLost: boolean } | null> {
    const e = await this.repo(opts.em).findOne({ where: { id }, lock: opts.share ? { mode: 'pessimistic_read' } : undefined });
    return e ? { request: entityToDomain(e), claimLost: e.claimLostAt !== null } : null;
  }

  /**
   * The columns a webhook payload reads, of the request whose id is the SQL expression `requestId`: the subquery
   * the webhook claim joins (RequestFactsPort.factsQuery), so that its batch of attempts and their requests are
   * one statement on the delivery worker's hot path. One row by primary key, or none.
   */
  static factsQuery(requestId: string): string {
    return `SELECT id AS "requestId", merchant_id AS "merchantId", proof_status AS "proofStatus", proof_source AS "proofSource",
                   tx_hash AS "txHash", payer_address AS "payerAddress", metadata
              FROM payment_requests WHERE id = ${requestId}`;
  }

  /**
   * Hand-written so that every filter reads only the rows it returns, at any table size (issue 14). A status,
   * proof_status or source filter becomes one branch per stored (status, proof_status) pair it may show, each
   * an ordered range of payment_requests_state_list (or a merchant's *_state_list / *_source_list), merged in
   * list order. "Lapsed reads as expired" is the deadline on the requested/opened branches (see stateBranches).
   * A plan's charges are few: plan_id reads them all through payment_requests_plan_period, one branch.
   */
  async list(f: ListFilter): Promise<{ items: PaymentRequest[]; hasMore: boolean }> {
    const params: unknown[] = [f.partnerId, f.testMode];
    const where = ['partner_id = $1', 'test_mode = $2'];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (f.merchantId) add('merchant_id = ?', f.merchantId);
    if (f.since) {
      add('created_at >= ?::timestamptz', f.since);
      add('created_at < ?::timestamptz', await this.visibleBefore());
    }
    if (f.until) add('created_at < ?::timestamptz', f.until);
    if (f.source) add('source = ?', f.source);
    if (f.planId) add('plan_id = ?', f.planId);
    if (f.after) {
      params.push(f.after.createdAt, f.after.id);
      where.push(`(created_at, id) > ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    const branched = !f.planId && (f.status !== undefined || f.proofStatus !== undefined || f.source !== undefined);
    const page = (limit: number, offset: number) => {
      params.push(limit, offset);
      return `ORDER BY created_at, id LIMIT $${params.length - 1} OFFSET $${params.length}`;
    };
    let sql: string;
    if (!branched) {
      if (f.status) where.push(statusCondition(f.status));
      if (f.proofStatus) add('proof_status = ?', f.proofStatus);
      sql = `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE ${where.join(' AND ')} ${page(f.limit + 1, f.offset)}`;
    } else {
      const take = page(f.limit + f.offset + 1, 0);
      // A lapsed-only branch is read whole, by id, and sorted (see stateBranches).
      const branches = stateBranches(f.status, f.proofStatus, 'partner_id = $1').map(
        (b) => `(SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE ${[...where, b.sql].join(' AND ')}${b.lapsedOnly ? '' : ` ${take}`})`,
      );
      sql = `SELECT * FROM (${branches.join(' UNION ALL ')}) r ${page(f.limit + 1, f.offset)}`;
    }
    const rows = await this.requests.query<RequestRow[]>(sql, params);
    return { items: rows.slice(0, f.limit).map(rowToDomain), hasMore: rows.length > f.limit };
  }

  /**
   * The `since` cursor's horizon (spec §4.3: paging by it "stays correct under concurrent creation"): no row
   * created at or after it can still commit, so a page read below it never moves a cursor past a row that
   * shows up later. It is the start of the oldest transaction seen holding a write lock on payment_requests
   * (pg_locks lists fast-path locks too), and at most this statement's start. A row's created_at is taken
   * once its insert holds that lock (the insert trigger, migration 1764000402900), so a writer not seen here
   * took its lock after this statement began (the two views are read one after the other, and pg_locks
   * backend by backend: not one snapshot) and stamps its rows later; hence statement_timestamp(), not the
   * time the views were read (under 6,400 inserts/s, rows that cursors had passed).
   * Its own statement, before the page's: read within the page's statement, a writer that committed after
   * the page's snapshot was taken would be missing from both. A page may then lack the rows of the last
   * milliseconds, which the next page shows. Sessions of other database roles show no xact_start here
   * unless the service's role may read all statistics (pg_read_all_stats): run writers as the service's role.
   */
  private async visibleBefore(): Promise<string> {
    // As text: a JavaScript Date would cut it to milliseconds. Prepared: planning it took longer (0.6 ms,
    // the two system views) than running it (0.2–0.3 ms).
    const [row] = await preparedQuery<{ horizon: string }>(
      this.requests.manager,
      'list_horizon',
      `SELECT least(statement_timestamp(), min(a.xact_start))::text AS horizon
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'relation' AND l.relation = 'payment_requests'::regclass AND l.mode = 'RowExclusiveLock'
          AND l.pid <> pg_backend_pid()`,
      [],
    );
    return row.horizon;
  }

  /** Whether another request was verified by this transaction (a payer re-using a hash). */
  /** The log indexes of `txHash` that requests other than `exceptId` hold as their claims. */
  async claimedLogsElsewhere(chainId: bigint, txHash: string, exceptId: string): Promise<Set<number>> {
    const rows = await this.requests.query<Array<{ claimed_log_index: number }>>(
      `SELECT claimed_log_index FROM payment_requests
        WHERE chain_id = $1 AND tx_hash = $2 AND claimed_log_index IS NOT NULL AND id <> $3`,
      [chainId.toString(), txHash, exceptId],
    );
    return new Set(rows.map((r) => r.claimed_log_index));
  }

  async verifiedElsewhere(chainId: bigint, txHash: string, exceptId: string): Promise<boolean> {
    return this.requests
      .createQueryBuilder('r')
      .where('r.chain_id = :chainId AND r.tx_hash = :txHash AND r.proof_status = :verified AND r.id <> :exceptId', {
        chainId: chainId.toString(),
        txHash,
        verified: 'verified',
        exceptId,
      })
      .getExists();
  }

  /**
   * The payer's hash: attached from none, or replacing an attached hash known not to pay (verify_note set,
   * DESIGN §7). Conditional, so a hash that may still pay is never replaced; false when nothing changed.
   */
  async attachProof(em: EntityManager, id: string, txHash: string): Promise<boolean> {
    const result = await em
      .createQueryBuilder()
      .update(PaymentRequestEntity)
      .set({
        proofStatus: 'attached',
        txHash,
        proofSource: 'payer',
        verifyNote: null,
        proofAttachedAt: () => 'COALESCE(proof_attached_at, now())',
        updatedAt: () => 'now()',
      })
      .where(`id = :id AND (proof_status = ANY(:from) OR (proof_status = 'attached' AND verify_note IS NOT NULL))`, {
        id,
        from: PROOF_TRANSITIONS.attach.from,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * Marks the request verified by this transfer when its proof_status still allows it. The unique index
   * payment_requests_claim refuses a transfer another request holds (the caller sees the violation).
   * Hand-written: one conditional statement, so two racing claims cannot both win.
   */
  async claim(em: EntityManager, id: string, t: ClaimedTransfer, source: string): Promise<boolean> {
    const [rows] = await em.query<[unknown[], number]>(
      `UPDATE payment_requests
          SET proof_status = 'verified', proof_verified_at = now(), tx_hash = $2, claimed_log_index = $3,
              payer_address = $4, proof_source = $5, verify_note = NULL, updated_at = now(),
              claimed_block_number = $7, claimed_block_hash = $8, claim_settled_at = NULL, claim_lost_at = NULL
        WHERE id = $1 AND proof_status = ANY($6) RETURNING id`,
      [id, t.txHash, t.logIndex, t.from, source, VERIFIABLE_FROM, t.blockNumber, t.blockHash],
    );
    return rows.length > 0;
  }

  /**
   * Why the payer's hash pays nothing: kept for operators, shown to the payer (proof_note), and what lets a
   * new hash replace it. Only over that same hash (a replaced one's late verdict must not block its successor)
   * and never over a verified request.
   */
  async noteRejection(id: string, txHash: string, reason: string): Promise<void> {
    await this.requests
      .createQueryBuilder()
      .update()
      .set({ verifyNote: reason, updatedAt: () => 'now()' })
      .where('id = :id AND tx_hash = :txHash AND proof_status <> :verified', { id, txHash, verified: 'verified' })
      .execute();
  }

  /**
   * The tokens of a chain in which a mode has requests a transfer may still pay, whatever the mode's token is
   * now: a mode moved to another token keeps its open requests in the old one. A loose index scan of the
   * partial index payment_requests_claimable (one probe per token), so the cost does not grow with the open
   * requests while a chain serves one mode (the usual case: live and test on different chain ids). On a chain
   * id both modes use (two local nodes), the index has no test_mode, so a probe reads the other mode's open
   * rows of the chain until it meets one of its own: 341 ms at 1,000,000 of them
   * (2026-11-27); an index with test_mode would cost every create an entry for a setup production has not.
   */
  async claimableTokens(chainId: bigint, testMode: boolean): Promise<string[]> {
    const rows = await this.requests.query<{ token_address: string }[]>(
      `WITH RECURSIVE t(token_address) AS (
         (SELECT token_address FROM payment_requests
           WHERE chain_id = $1 AND amount_locked AND test_mode = $2
           ORDER BY token_address LIMIT 1)
         UNION ALL
         SELECT (SELECT p.token_address FROM payment_requests p
                  WHERE p.chain_id = $1 AND p.amount_locked AND p.test_mode = $2
                    AND p.token_address > t.token_address
                  ORDER BY p.token_address LIMIT 1)
           FROM t WHERE t.token_address IS NOT NULL)
       SELECT token_address FROM t WHERE token_address IS NOT NULL`,
      [chainId.toString(), testMode],
    );
    return rows.map((r) => r.token_address);
  }

  /**
   * Wallets with held amounts, paid or not (the chain scan asks the chain for transfers to these; a paid
   * request's wallet stays watched until its amount is released, so a second payment is seen): a
   * loose index scan of payment_requests_claimable, one probe per wallet, so the cost does not grow with the
   * open requests (DISTINCT read them all: 194 ms per scan at 1,000,000 open requests of one wallet).
   */
  async claimableRecipients(chainId: bigint, token: string): Promise<string[]> {
    const rows = await this.requests.query<{ recipient: string }[]>(
      `WITH RECURSIVE t(recipient) AS (
         (SELECT recipient FROM payment_requests
           WHERE chain_id = $1 AND token_address = $2 AND amount_locked
           ORDER BY recipient LIMIT 1)
         UNION ALL
         SELECT (SELECT p.recipient FROM payment_requests p
                  WHERE p.chain_id = $1 AND p.token_address = $2 AND p.amount_locked
                    AND p.recipient > t.recipient
                  ORDER BY p.recipient LIMIT 1)
           FROM t WHERE t.recipient IS NOT NULL)
       SELECT recipient FROM t WHERE recipient IS NOT NULL`,
      [chainId.toString(), token],
    );
    return rows.map((r) => r.recipient);
  }

  /**
   * The transfer that paid a verified request (its block as last known, and whether the finality job found
   * it lost or settled it); null when it is not verified.
   */
  async claimOf(id: string): Promise<{
    txHash: string; logIndex: number; blockNumber: number | null; blockHash: string | null; lost: boolean; settled: boolean;
  } | null> {
    const [row] = await this.requests.query<{
      tx_hash: string; claimed_log_index: number; claimed_block_number: string | null; claimed_block_hash: string | null;
      lost: boolean; settled: boolean;
    }[]>(
      `SELECT tx_hash, claimed_log_index, claimed_block_number, claimed_block_hash, claim_lost_at IS NOT NULL AS lost,
              claim_settled_at IS NOT NULL AS settled
         FROM payment_requests
        WHERE id = $1 AND proof_status = 'verified' AND claimed_log_index IS NOT NULL`,
      [id],
    );
    if (!row) return null;
    const blockNumber = row.claimed_block_number === null ? null : Number(row.claimed_block_number);
    return { txHash: row.tx_hash, logIndex: row.claimed_log_index, blockNumber, blockHash: row.claimed_block_hash, lost: row.lost, settled: row.settled };
  }

  /**
   * The claim held on (chain, tx, log index), if any: its request, the block it was last seen in and whether
   * it is settled. The log index alone names a transfer only within that block (the scan compares them).
   */
  async claimAt(chainId: bigint, txHash: string, logIndex: number): Promise<{ requestId: string; blockHash: string | null; blockNumber: number | null; settled: boolean } | null> {
    const [row] = await this.requests.query<{ id: string; claimed_block_hash: string | null; claimed_block_number: string | null; settled: boolean }[]>(
      `SELECT id, claimed_block_hash, claimed_block_number, claim_settled_at IS NOT NULL AS settled FROM payment_requests
        WHERE chain_id = $1 AND tx_hash = $2 AND claimed_log_index = $3`,
      [chainId.toString(), txHash, logIndex],
    );
    if (!row) return null;
    const blockNumber = row.claimed_block_number === null ? null : Number(row.claimed_block_number);
    return { requestId: row.id, blockHash: row.claimed_block_hash, blockNumber, settled: row.settled };
  }

  /**
   * Amounts are unique among the held amounts of a merchant and asset, so a transfer's value names its
   * request: one probe of payment_requests_claimable, whatever the wallet's number of open requests. A request
   * still held after its verification is named too, so that a second payment of it is kept as
   * `request_already_verified`. An unverified request comes first: wallets are unique to a merchant, but
   * should two merchants' held amounts ever meet at one wallet, a payment must not be taken for a repeat.
   */
  async claimableByAmount(chainId: bigint, token: string, recipient: string, amount: bigint): Promise<string | null> {
    const row = await this.requests
      .createQueryBuilder('r')
      .select('r.id', 'id')
      .where('r.chain_id = :chainId AND r.token_address = :token AND r.recipient = :recipient AND r.amount = :amount', {
        chainId: chainId.toString(),
        token,
        recipient,
        amount: amount.toString(),
      })
      .andWhere('r.amount_locked')
      .orderBy(`r.proof_status = 'verified'`)
      .limit(1)
      .getRawOne<{ id: string }>();
    return row?.id ?? null;
  }

  /**
   * Every lapsed request becomes expired: no proof past expires_at, or an attached proof that has not
   * verified by claim_until (DESIGN §7; proof_status stays attached). Returns the expired ids and their plans.
   */
  async expireLapsed(em: EntityManager = this.requests.manager, limit = 1000, planId?: string): Promise<{ id: string; planId: string | null; periodIndex: number | null }[]> {
    const rule = STATUS_TRANSITIONS.expire;
    const params = { to: rule.to, from: rule.from, proof: rule.whenProof, limit, planId };
    const chosen = planId === undefined
      // The sweep: per lapsing proof state, its partial index by deadline (payment_requests_expiring,
      // payment_requests_attached_expiring), so it reads what has lapsed and nothing else. With the three
      // tests in one WHERE the planner cannot use them: it estimated a quarter of a 1.5M-row table lapsed (the
      // past deadlines of settled history) and read all of it, 317 ms every sweep with nothing lapsed; this
      // way 0.8 ms (measured 2026-11-27). The branches merge by deadline, so a batch takes the longest lapsed
      // of either state first.
      ? `ARRAY(SELECT id FROM (${(rule.whenProof as readonly LapsingProof[]).map((p) => {
          const deadline = DEADLINE_COLUMN[LAPSES_AT[p]];
          // The states written out, so the partial index's predicate is proven in a generic plan too.
          return `(SELECT id, ${deadline} AS lapsed_at FROM payment_requests
                    WHERE ${checkIn('status', rule.from)} AND proof_status = '${p}' AND ${deadline} <= now()
                    ORDER BY ${deadline} LIMIT :limit)`;
        }).join(' UNION ALL ')}) lapsed ORDER BY lapsed_at LIMIT :limit)`
      // One plan's charges only (PlanChargesService.storeLapsed), through payment_requests_plan_period.
      : `ARRAY(SELECT id FROM payment_requests
                WHERE plan_id = :planId AND status = ANY(:from) AND proof_status = ANY(:proof) AND ${LAPSED} LIMIT :limit)`;
    const result = await this.repo(em)
      .createQueryBuilder()
      .update()
      .set({ status: rule.to, expiredAt: () => 'now()', updatedAt: () => 'now()' })
      // Updated by id; the state tests again, for a row another writer changed meanwhile (see oneOf).
      .where(`id = ANY(${chosen})`)
      .andWhere(`${oneOf('status', rule.from, REQUEST_STATUSES)} AND ${oneOf('proof_status', rule.whenProof!, PROOF_STATUSES)} AND ${LAPSED}`)
      .setParameters(params)
      .returning('id, plan_id, period_index')
      .updateEntity(false)
      .execute();
    return (result.raw as { id: string; plan_id: string | null; period_index: number | null }[]).map((r) => ({
      id: r.id,
      planId: r.plan_id,
      periodIndex: r.period_index,
    }));
  }


  /**
   * The test clock's advance (DESIGN §5, §8): an unpaid charge (no proof) expires now, its expires_at set to
   * this moment; its claim window keeps its grace after it. Conditional like every transition; null when the
   * request was not open and unpaid.
   */
  async expireEarly(em: EntityManager, id: string): Promise<PaymentRequest | null> {
    const rule = STATUS_TRANSITIONS.expire;
    const [rows] = await em.query<[RequestRow[], number]>(
      `UPDATE payment_requests
          SET status = $2, expired_at = now(), claim_until = now() + (claim_until - expires_at), expires_at = now(),
              updated_at = now()
        WHERE id = $1 AND status = ANY($3) AND proof_status = 'none'
        RETURNING ${REQUEST_COLUMNS}`,
      [id, rule.to, rule.from],
    );
    return rows[0] ? rowToDomain(rows[0]) : null;
  }

  /** A plan's charges, oldest first (DESIGN §5: the plan's detail and the payer's page). */
  async chargesOf(planId: string, em?: EntityManager): Promise<PaymentRequest[]> {
    const rows = await this.repo(em).query<RequestRow[]>(
      `SELECT ${REQUEST_COLUMNS} FROM payment_requests WHERE plan_id = $1 ORDER BY period_index, created_at, id`,
      [planId],
    );
    return rows.map(rowToDomain);
  }

  /**
   * Requests whose submitted hash is attached and unanswered (no verify_note) while their claim window is open:
   * the ones a payer's verification job should be working on. Run only when Redis lost its jobs (and at a
   * worker's first start): every row with a hash is read, through payment_requests_tx. `changedAt`: the row's
   * latest change, at or after its hash's attachment (proof_attached_at keeps the first hash's, which a
   * replacing hash does not reset).
   */
  async attachedUnanswered(): Promise<Array<{ id: string; txHash: string; changedAt: Date }>> {
    const rows = await this.requests.query<Array<{ id: string; tx_hash: string; updated_at: Date }>>(
      `SELECT id, tx_hash, updated_at FROM payment_requests
        WHERE tx_hash IS NOT NULL AND proof_status = 'attached' AND verify_note IS NULL AND claim_until > now()`,
    );
    return rows.map((r) => ({ id: r.id, txHash: r.tx_hash, changedAt: r.updated_at }));
  }

  /** The period of a plan's latest verified charge whose claim stands (DESIGN §5), or null. */
  async latestPaidPeriod(em: EntityManager, planId: string): Promise<number | null> {
    const [row] = await em.query<Array<{ k: number | null }>>(
      `SELECT max(period_index)::int AS k FROM payment_requests WHERE plan_id = $1 AND proof_status = 'verified' AND claim_lost_at IS NULL`,
      [planId],
    );
    return row.k;
  }

  /**
   * How many of a plan's charges lapsed unpaid (stored expired, not verified) after its latest verified charge:
   * its misses in a row as of now (DESIGN §5). Read in the transaction that verifies a charge, after its claim.
   */
  async chargesMissedSincePaid(em: EntityManager, planId: string): Promise<number> {
    const [row] = await em.query<Array<{ missed: number }>>(
      `SELECT count(*)::int AS missed FROM payment_requests r
        WHERE r.plan_id = $1 AND r.status = 'expired' AND r.proof_status <> 'verified'
          AND r.period_index > COALESCE((SELECT max(v.period_index) FROM payment_requests v
                                          WHERE v.plan_id = $1 AND v.proof_status = 'verified' AND v.claim_lost_at IS NULL), -1)`,
      [planId],
    );
    return row.missed;
  }

  /**
   * Frees the amounts of requests whose claim window has closed *as the chain scan sees it*: the scan has
   * handled a block stamped after claim_until (plus the 60 s of clock tolerance), so no unseen transfer can
   * still pay them. Released on the wall clock instead, a payment mined near the end of the window but
   * scanned after it would find no open request, or the next request of the same price. A request a transfer
   * the scan could not decide yet may pay keeps its amount until that transfer is decided, or given up (the
   * scan gives up on it a while after the request's window, see ChainScanService).
   */
  async releaseClosedAmounts(batch = RELEASE_BATCH): Promise<number> {
    let released = 0;
    for (;;) {
      // Freed once its window closed more than a minute ago by both clocks: the chain's (no block still to
      // come can pay it) and the database's, which stamps the next request's created_at, whose window starts
      // 60 s before it (the pay rule's early tolerance). By the chain's alone, a chain clock a few seconds ahead
      // let a second transfer of the last request's window pay the next one of that price.
      // Per asset (chain cursor), its closed requests in claim_until order on payment_requests_locked_until:
      // the sweep reads only what it frees (a predicate on the cursor's time alone read every locked request,
      // 437 ms at 1,000,000 open; written this way 1 ms when none closed). The ids are gathered into an array
      // first so that the rows are updated by primary key: joined, Postgres may plan a hash join over a
      // sequential scan of the table. Hand-written: the query builder does not express the lateral subquery.
      const [, n] = await this.requests.query<[unknown[], number]>(
        `UPDATE payment_requests p SET amount_locked = false
          WHERE p.id = ANY(ARRAY(
                  SELECT r.id FROM chain_cursors c
                   CROSS JOIN LATERAL (
                     SELECT r.id FROM payment_requests r
                      WHERE r.amount_locked AND r.chain_id = c.chain_id AND r.token_address = c.token_address
                        AND r.claim_until < c.last_block_time - interval '60 seconds'
                        AND r.claim_until < now() - interval '60 seconds'
                        AND NOT EXISTS (SELECT 1 FROM unmatched_transfers u WHERE u.pending_request_id = r.id)
                      ORDER BY r.claim_until LIMIT $1) r))
            AND p.amount_locked`,
        [batch],
      );
      released += n;
      // A full batch (of one asset or of several together) may have left more: go on until one frees less.
      if (n < batch) return released;
    }
  }

  /**
   * Applies a status trigger as one conditional UPDATE built from the transition table, so two racing
   * writers (cancel against expiry against open) cannot both win. Returns the updated request, or null when
   * the request was not in a state the trigger applies to.
   */
  async applyStatus(
    id: string,
    trigger: StatusTrigger,
    opts: { em?: EntityManager; scope?: { partnerId: string; testMode: boolean; merchantId?: string } } = {},
  ): Promise<PaymentRequest | null> {
    const rule = STATUS_TRANSITIONS[trigger];
    const q = this.repo(opts.em)
      .createQueryBuilder()
      .update()
      .set({ status: rule.to, [STAMP[trigger]]: () => 'now()', updatedAt: () => 'now()' })
      // By id: the state tests must not let a partial index on state be read instead of the key (see oneOf).
      .where(`id = :id AND ${oneOf('status', rule.from, REQUEST_STATUSES)}`, { id });
    if (rule.whenProof) q.andWhere(oneOf('proof_status', rule.whenProof, PROOF_STATUSES));
    // Open and cancel need a live request; expiry needs a lapsed one (each proof state at its deadline).
    q.andWhere(trigger === 'expire' ? LAPSED : 'expires_at > now()');
    if (opts.scope) q.andWhere('partner_id = :partnerId AND test_mode = :testMode', opts.scope);
    if (opts.scope?.merchantId !== undefined) q.andWhere('merchant_id = :merchantId', { merchantId: opts.scope.merchantId });
    const result = await q.returning(REQUEST_COLUMNS).updateEntity(false).execute();
    const [row] = result.raw as RequestRow[];
    return row ? rowToDomain(row) : null;
  }
}

/**
 * The list's state filter as disjoint conditions, one per stored (status, proof_status) pair that may show as
 * the asked status and proof: a pair that lapses (EXPIRING) shows as itself before its deadline and as expired
 * from it, so status=requested/opened keeps it with "deadline > now()", status=expired takes it with
 * "deadline <= now()" (the expiring indexes hold exactly those rows), no status
 * filter takes it whole. `scope` is the list's partner condition.
 */
function stateBranches(
  status: RequestStatus | undefined,
  proof: ProofStatus | undefined,
  scope: string,
): Array<{ sql: string; lapsedOnly: boolean }> {
  const branches: Array<{ sql: string; lapsedOnly: boolean }> = [];
  for (const s of REQUEST_STATUSES) {
    for (const p of PROOF_STATUSES) {
      if (proof !== undefined && p !== proof) continue;
      const pair = `status = '${s}' AND proof_status = '${p}'`;
      const lapses = EXPIRING.from.includes(s) && (EXPIRING.whenProof as readonly ProofStatus[]).includes(p);
      const showsAsItself = status === undefined || status === s;
      if (!lapses) {
        if (showsAsItself) branches.push({ sql: pair, lapsedOnly: false });
        continue;
      }
      const deadline = DEADLINE_COLUMN[LAPSES_AT[p as LapsingProof]];
      const showsAsExpired = status === undefined || status === 'expired';
      if (showsAsItself && showsAsExpired) branches.push({ sql: pair, lapsedOnly: false });
      // IS TRUE keeps it a filter: as an index condition the planner would range over the expiring index and sort.
      else if (showsAsItself) branches.push({ sql: `${pair} AND (${deadline} > now()) IS TRUE`, lapsedOnly: false });
      // The lapsed rows the sweep has not reached yet are few, and only the expiring indexes know which they
      // are (by deadline, not in list order): the subquery reads the partner's own ids there, index-only (the
      // key holds partner, status and id), and the outer query fetches them by id, applies the list's other
      // filters and sorts. The subquery names the partner but not the mode, on purpose: with test_mode the
      // pair is a tight range of state_list, and the planner, which sees the deadline as almost always past
      // (table-wide it is), walks all the pair's live rows there instead. An ordered branch has the same fault.
      else if (showsAsExpired) {
        const lapsed = `${pair} AND ${deadline} <= now()`;
        branches.push({
          sql: `${lapsed} AND id = ANY(ARRAY(SELECT id FROM payment_requests WHERE ${scope} AND ${lapsed}))`,
          lapsedOnly: true,
        });
      }
    }
  }
  return branches;
}

/** A status filter as shown to partners: a lapsed request reads as expired (one condition, no branches). */
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

/** Runs one statement of em's open transaction so that its failure undoes only itself. */
async function underSavepoint<T>(em: EntityManager, work: () => Promise<T>): Promise<T> {
  await em.query('SAVEPOINT request_insert');
  try {
    const result = await work();
    await em.query('RELEASE SAVEPOINT request_insert');
    return result;
  } catch (e) {
    await em.query('ROLLBACK TO SAVEPOINT request_insert');
    throw e;
  }
}
