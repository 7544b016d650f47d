import { Injectable } from '@nestjs/common';
import { Db } from '../../database/db';
import type { PostOutcome } from './webhook-poster';
import type { AttemptOutcome } from './delivery-policy';
import type { EventKind } from './event-outbox';
import { MicroBatch } from '../../common/micro-batch';

export const DELIVERY_STATES = ['pending', 'delivering', 'delivered', 'abandoned', 'skipped'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** An outbox row claimed for one attempt, with what the attempt is built from. */
export interface ClaimedEvent {
  id: string;
  event: EventKind;
  partner_id: string;
  request_id: string;
  test_mode: boolean;
  recorded_at: Date;
  merchant_id: string;
  proof_status: string;
  proof_source: string | null;
  tx_hash: string | null;
  payer_address: string | null;
  metadata: Record<string, unknown> | null;
  webhook_url: string | null;
  webhook_enabled: boolean;
  webhook_secret: string | null;
  webhook_previous_secret: string | null;
  /** Number of the last attempt that ended a series (delivered or abandoned); 0 when none did. */
  series_base: number;
}

export interface DeliveryRow {
  id: string;
  partner_id: string;
  request_id: string;
  event: EventKind;
  test_mode: boolean;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  recorded_at: Date;
  relayed_at: Date | null;
}

export interface AttemptRow {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  outcome: AttemptOutcome;
}

export interface AttemptRecord {
  eventId: string;
  attempt: number;
  startedAt: Date;
  post: Pick<PostOutcome, 'statusCode' | 'durationMs' | 'errorMessage'> & { errorClass: string | null };
  outcome: AttemptOutcome;
  /** For outcome 'retry': when the next attempt is due, in ms from now. */
  delayMs: number;
}

const STATE_AFTER: Record<AttemptOutcome, DeliveryState> = { delivered: 'delivered', retry: 'pending', abandoned: 'abandoned' };
const DELIVERY_COLUMNS = `id, partner_id, request_id, event, test_mode, state, attempts, next_attempt_at, last_attempt_at,
  delivered_at, recorded_at, relayed_at`;
const MAX_ERROR_MESSAGE = 500;

/**
 * Rows are locked in id order, so two batches that share an event (only duplicate jobs do) wait for each
 * other instead of deadlocking.
 */
function inIdOrder<T extends { eventId: string }>(xs: T[]): T[] {
  return [...xs].sort((a, b) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
}

/** For each position: whether it is the first occurrence of its key. */
function firstOfEach(keys: string[]): boolean[] {
  const seen = new Set<string>();
  return keys.map((k) => !seen.has(k) && seen.add(k) !== undefined);
}

/**
 * The webhook outbox (webhook_events) and its attempt log (webhook_attempts). Every state change is
 * conditional on the attempt number, so a duplicate or stalled job can neither record an attempt twice nor
 * mark a delivery delivered twice (STYLE rule 1).
 */
@Injectable()
export class WebhookEventsRepository {
  constructor(private readonly db: Db) {}

  private readonly claims = new MicroBatch<{ eventId: string; attempt: number }, ClaimedEvent | null>((xs) => this.claimBatch(xs));
  private readonly records = new MicroBatch<AttemptRecord, boolean>((xs) => this.recordBatch(xs));

  /**
   * Takes attempt n of an event: only when the event is due for delivery and n follows the last recorded
   * attempt. A re-run of the same job after a crash ('delivering', attempts still n-1) takes it again, on
   * purpose: the crashed run recorded nothing. Returns null for a stale or duplicate job. Claims made
   * together share one statement.
   */
  claim(eventId: string, attempt: number): Promise<ClaimedEvent | null> {
    return this.claims.submit({ eventId, attempt });
  }

  /**
   * Stores attempt n and moves the event on; nothing happens unless the event still stands at attempt n-1.
   * Returns false when another run of the same attempt got there first. Records made together share one
   * statement.
   */
  record(r: AttemptRecord): Promise<boolean> {
    return this.records.submit(r);
  }

  private async claimBatch(xs: Array<{ eventId: string; attempt: number }>): Promise<Array<ClaimedEvent | null>> {
    const first = firstOfEach(xs.map((x) => `${x.eventId}/${x.attempt}`));
    const sorted = inIdOrder(xs);
    const rows = await this.db.query<ClaimedEvent & { claimed_attempt: number }>(
      `UPDATE webhook_events e SET state = 'delivering', last_attempt_at = now()
         FROM unnest($1::uuid[], $2::int[]) AS j(id, attempt), payment_requests r, partners p
        WHERE e.id = j.id AND e.attempts = j.attempt - 1 AND e.deliver AND e.state IN ('pending','delivering')
          AND r.id = e.request_id AND p.id = e.partner_id
       RETURNING j.attempt AS claimed_attempt, e.id, e.event, e.partner_id, e.request_id, e.test_mode, e.recorded_at,
                 r.merchant_id, r.proof_status, r.proof_source, r.tx_hash, r.payer_address, r.metadata,
                 p.webhook_url, p.webhook_enabled, p.webhook_secret, p.webhook_previous_secret,
                 (SELECT COALESCE(max(a.attempt), 0)::int FROM webhook_attempts a
                   WHERE a.event_id = e.id AND a.outcome <> 'retry') AS series_base`,
      [sorted.map((x) => x.eventId), sorted.map((x) => x.attempt)],
      'webhook_claim',
    );
    const byKey = new Map(rows.map((r) => [`${r.id}/${r.claimed_attempt}`, r]));
    // The same attempt twice in one batch (a duplicate job): the second is the duplicate.
    return xs.map((x, i) => (first[i] ? (byKey.get(`${x.eventId}/${x.attempt}`) ?? null) : null));
  }

  private async recordBatch(xs: AttemptRecord[]): Promise<boolean[]> {
    const first = firstOfEach(xs.map((x) => `${x.eventId}/${x.attempt}`));
    const rs = inIdOrder(xs.filter((_, i) => first[i]));
    const rows = await this.db.query<{ event_id: string; attempt: number }>(
      `WITH j AS (
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::int[], $6::int[], $7::text[],
                              $8::text[], $9::int[], $10::text[])
                AS j(id, attempt, state, started_at, duration_ms, status_code, error_class, error_message, delay_ms, outcome)),
       ev AS (
         UPDATE webhook_events e
            SET attempts = j.attempt, state = j.state, last_attempt_at = j.started_at,
                next_attempt_at = CASE WHEN j.state = 'pending' THEN now() + j.delay_ms * interval '1 millisecond' END,
                delivered_at = CASE WHEN j.state = 'delivered' THEN now() ELSE e.delivered_at END
           FROM j
          WHERE e.id = j.id AND e.attempts = j.attempt - 1 AND e.state IN ('pending','delivering')
         RETURNING e.id, j.attempt)
       INSERT INTO webhook_attempts (event_id, attempt, started_at, duration_ms, status_code, error_class, error_message, outcome)
       SELECT j.id, j.attempt, j.started_at, j.duration_ms, j.status_code, j.error_class, j.error_message, j.outcome
         FROM j JOIN ev ON ev.id = j.id AND ev.attempt = j.attempt
       ON CONFLICT (event_id, attempt) DO NOTHING
       RETURNING event_id, attempt`,
      [
        rs.map((r) => r.eventId),
        rs.map((r) => r.attempt),
        rs.map((r) => STATE_AFTER[r.outcome]),
        rs.map((r) => r.startedAt),
        rs.map((r) => r.post.durationMs),
        rs.map((r) => r.post.statusCode),
        rs.map((r) => r.post.errorClass),
        rs.map((r) => (r.post.errorMessage ? r.post.errorMessage.slice(0, MAX_ERROR_MESSAGE) : null)),
        rs.map((r) => r.delayMs),
        rs.map((r) => r.outcome),
      ],
      'webhook_record_attempts',
    );
    const done = new Set(rows.map((r) => `${r.event_id}/${r.attempt}`));
    return xs.map((x, i) => first[i] && done.has(`${x.eventId}/${x.attempt}`));
  }

  /** Marks freshly committed events as relayed; returns those that are to be delivered, with their next attempt. */
  async markRelayed(eventIds: string[]): Promise<Array<{ id: string; attempt: number }>> {
    return this.db.query<{ id: string; attempt: number }>(
      `UPDATE webhook_events SET relayed_at = now(), next_attempt_at = COALESCE(next_attempt_at, now())
        WHERE id = ANY($1::uuid[]) AND deliver AND state = 'pending' AND relayed_at IS NULL
       RETURNING id, attempts + 1 AS attempt`,
      [eventIds],
      'webhook_mark_relayed',
    );
  }

  /**
   * Events that should have a job by now but may have lost it: pending and due for longer than graceMs, or
   * 'delivering' for longer than an attempt can take (its worker may have died).
   */
  async overdue(graceMs: number, attemptMaxMs: number, limit: number): Promise<Array<{ id: string; attempt: number }>> {
    return this.db.query<{ id: string; attempt: number }>(
      `SELECT id, attempts + 1 AS attempt FROM webhook_events
        WHERE deliver AND (
              (state = 'pending' AND COALESCE(next_attempt_at, recorded_at) < now() - $1::int * interval '1 millisecond')
           OR (state = 'delivering' AND last_attempt_at < now() - $2::int * interval '1 millisecond'))
        ORDER BY COALESCE(next_attempt_at, recorded_at)
        LIMIT $3`,
      [graceMs, attemptMaxMs, limit],
      'webhook_overdue',
    );
  }

  async list(f: { partnerId?: string; requestId?: string; state?: DeliveryState; limit: number; offset: number }): Promise<DeliveryRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (f.partnerId) where.push(`partner_id = $${params.push(f.partnerId)}`);
    if (f.requestId) where.push(`request_id = $${params.push(f.requestId)}`);
    if (f.state) where.push(`state = $${params.push(f.state)}`);
    return this.db.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY recorded_at DESC, id DESC LIMIT $${params.push(f.limit)} OFFSET $${params.push(f.offset)}`,
      params,
    );
  }

  async get(eventId: string): Promise<DeliveryRow | null> {
    const [row] = await this.db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_events WHERE id = $1`, [eventId]);
    return row ?? null;
  }

  async attempts(eventId: string): Promise<AttemptRow[]> {
    return this.db.query<AttemptRow>(
      `SELECT attempt, started_at, duration_ms, status_code, error_class, error_message, outcome
         FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`,
      [eventId],
    );
  }

  /**
   * Opens a new series of attempts for a finished delivery, keeping its id (the payload's delivery_id).
   * Attempt numbers continue, so job ids stay unique. Null when the event is not in a finished state.
   */
  async reopen(eventId: string): Promise<DeliveryRow | null> {
    const [row] = await this.db.query<DeliveryRow>(
      `UPDATE webhook_events SET state = 'pending', next_attempt_at = now()
        WHERE id = $1 AND deliver AND state IN ('delivered','abandoned')
       RETURNING ${DELIVERY_COLUMNS}`,
      [eventId],
    );
    return row ?? null;
  }
}
