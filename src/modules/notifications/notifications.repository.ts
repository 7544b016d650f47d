import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, In, type EntityManager, type Repository } from 'typeorm';
import { oneOf } from '../../database/state-test';
import { NOTIFICATION_STATUSES, type AttemptOutcome, type NewNotification, type NotificationChannel, type NotificationKind, type NotificationStatus, type StoredNotification } from './notification';
import { NotificationEntity } from './notification.entity';

/** A message claimed for one attempt: what the sender needs to build and send it. */
export type ClaimedNotification = Pick<
  StoredNotification,
  'id' | 'kind' | 'channel' | 'to' | 'requestId' | 'planId' | 'periodIndex' | 'dueAt' | 'messageId' | 'createdAt'
> & { attempt: number };

/** A pending message that should have a job: its id and the number of its next attempt. */
export interface DueNotification {
  id: string;
  attempt: number;
}

export interface AttemptResult {
  id: string;
  attempt: number;
  /** 'in_doubt' fails the message (status 'failed') and marks the attempt in doubt. */
  outcome: 'sent' | 'retry' | 'failed' | 'abandoned' | 'in_doubt';
  error: string | null;
  response: string | null;
  delayMs: number;
}

/** The message is pending, for the statements that take messages by id: never through notifications_due (see oneOf). */
const PENDING = oneOf('status', ['pending'], NOTIFICATION_STATUSES);

const MAX_TEXT = 500;
const clip = (s: string | null) => (s === null ? null : s.slice(0, MAX_TEXT));

/**
 * notifications and notification_attempts: the only reader and writer. Statements end in a SELECT or an
 * INSERT, whose rows TypeORM's query() returns as they are (a top-level UPDATE comes back as [rows, count]). Every change of a message is
 * conditional on its attempt number and lease, so a duplicate or late job can neither send it twice nor
 * record an attempt twice (STYLE rule 1).
 */
@Injectable()
export class NotificationsRepository {
  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(NotificationEntity) private readonly rows: Repository<NotificationEntity>,
  ) {}

  /**
   * Writes messages in the caller's transaction. A message that exists already for its (request, kind,
   * channel) is not written again (the unique constraint); returns the ids written.
   */
  async insert(em: EntityManager, ms: NewNotification[], messageId: (id: string) => string): Promise<string[]> {
    if (ms.length === 0) return [];
    const ids = ms.map(() => randomUUID());
    const rows = await em.query<Array<{ id: string }>>(
      `INSERT INTO notifications (id, kind, channel, "to", request_id, plan_id, period_index, due_at, message_id)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::uuid[], $6::uuid[], $7::int[], $8::timestamptz[], $9::text[])
       ON CONFLICT (request_id, kind, channel) DO NOTHING
       RETURNING id`,
      [
        ids,
        ms.map((m) => m.kind),
        ms.map((m) => m.channel),
        ms.map((m) => m.to),
        ms.map((m) => m.requestId),
        ms.map((m) => m.planId ?? null),
        ms.map((m) => m.periodIndex ?? null),
        ms.map((m) => m.dueAt ?? null),
        ids.map(messageId),
      ],
    );
    return rows.map((r) => r.id);
  }

  /** The next attempt of each pending message among ids that is not held by a worker. */
  async due(ids: string[]): Promise<DueNotification[]> {
    if (ids.length === 0) return [];
    return this.dataSource.query<DueNotification[]>(
      `SELECT id, attempts + 1 AS attempt FROM notifications WHERE id = ANY($1::uuid[]) AND ${PENDING} AND lease_until IS NULL`,
      [ids],
    );
  }

  /** The message, when attempt n is the one it waits for. */
  async waitingFor(id: string, attempt: number): Promise<StoredNotification | null> {
    const e = await this.rows.createQueryBuilder('n')
      .where(`n.id = :id AND n.attempts = :attempts AND n.${PENDING}`, { id, attempts: attempt - 1 })
      .getOne();
    return e ? toStored(e) : null;
  }

  /**
   * Takes attempt n: only when the message is pending, at attempt n-1 and held by nobody. Stores the attempt
   * as 'sending' and leases the message, in one statement committed before anything is sent: from here on,
   * a worker that vanishes leaves a visible trace rather than a message that could go out twice. `to`: the
   * address this attempt sends to, when it is no longer the stored one (a merchant's note, recipientNow).
   * `token`: the claimer's id for this claim (see claimedBy).
   */
  async claim(
    id: string,
    attempt: number,
    leaseMs: number,
    token: string,
    to?: string,
    em: EntityManager = this.dataSource.manager,
  ): Promise<ClaimedNotification | null> {
    const rows = await em.query<ClaimRow[]>(
      `WITH c AS (
         UPDATE notifications SET attempts = $2, lease_until = now() + $3::int * interval '1 millisecond', "to" = COALESCE($4, "to"), claim_token = $5
          WHERE id = $1 AND attempts = $2::int - 1 AND ${PENDING} AND lease_until IS NULL
         RETURNING id, kind, channel, "to", request_id, plan_id, period_index, due_at, message_id, created_at, attempts),
       a AS (INSERT INTO notification_attempts (notification_id, attempt, outcome, "to", handover_tracked)
             SELECT id, attempts, 'sending', "to", true FROM c RETURNING notification_id)
       SELECT c.* FROM c JOIN a ON a.notification_id = c.id`,
      [id, attempt, leaseMs, to ?? null, token],
    );
    const r = rows[0];
    return r
      ? {
          id: r.id, kind: r.kind, channel: r.channel, to: r.to, requestId: r.request_id, planId: r.plan_id, periodIndex: r.period_index,
          dueAt: r.due_at, messageId: r.message_id, createdAt: r.created_at, attempt: r.attempts,
        }
      : null;
  }

  /**
   * Whether attempt n is held by the claim made with `token`, its lease not yet ended nor declared in doubt:
   * asked when the claim's transaction failed in a way that may have committed (its COMMIT's answer lost).
   */
  async claimedBy(id: string, attempt: number, token: string): Promise<boolean> {
    const rows = await this.dataSource.query<unknown[]>(
      `SELECT 1 FROM notifications WHERE id = $1 AND attempts = $2 AND claim_token = $3 AND lease_until > now() AND ${PENDING}`,
      [id, attempt, token],
    );
    return rows.length > 0;
  }

  /**
   * Stores the outcome of attempt n and moves the message on, releasing its lease. Nothing happens unless
   * the message still holds attempt n's lease (a lease the re-drive already declared in doubt stays so).
   */
  async record(r: AttemptResult): Promise<boolean> {
    const rows = await this.dataSource.query<Array<{ id: string }>>(
      `WITH n AS (
         UPDATE notifications
            SET status = CASE $3::text WHEN 'retry' THEN 'pending' WHEN 'in_doubt' THEN 'failed' ELSE $3::text END,
                lease_until = NULL,
                last_error = $4::text,
                next_attempt_at = CASE WHEN $3::text = 'retry' THEN now() + $6::int * interval '1 millisecond' ELSE next_attempt_at END,
                sent_at = CASE WHEN $3::text = 'sent' THEN now() ELSE sent_at END
          WHERE id = $1 AND attempts = $2::int AND ${PENDING} AND lease_until IS NOT NULL
         RETURNING id)
       , a AS (
         UPDATE notification_attempts a SET outcome = $3, finished_at = now(), error = $4, response = $5
           FROM n WHERE a.notification_id = n.id AND a.attempt = $2
         RETURNING a.notification_id AS id)
       SELECT id FROM a`,
      [r.id, r.attempt, r.outcome, clip(r.error), clip(r.response), r.delayMs],
    );
    return rows.length > 0;
  }

  /** Why attempt n of a pending message, held by nobody, could not be made: shown to operators meanwhile. */
  async noteUnsent(id: string, attempt: number, error: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE notifications SET last_error = $3::text WHERE id = $1 AND attempts = $2::int - 1 AND ${PENDING} AND lease_until IS NULL`,
      [id, attempt, clip(error)],
    );
  }

  /**
   * Abandons a message at attempt n that was never handed to a transport (it cannot be built): only when it
   * is pending, at attempt n-1 and held by nobody, like a claim. Attempt n is stored as abandoned.
   */
  async abandonUnsent(id: string, attempt: number, error: string): Promise<boolean> {
    const rows = await this.dataSource.query<Array<{ id: string }>>(
      `WITH n AS (
         UPDATE notifications SET attempts = $2, status = 'abandoned', last_error = $3::text
          WHERE id = $1 AND attempts = $2::int - 1 AND ${PENDING} AND lease_until IS NULL
         RETURNING id, attempts)
       , a AS (
         INSERT INTO notification_attempts (notification_id, attempt, outcome, finished_at, error)
         SELECT id, attempts, 'abandoned', now(), $3::text FROM n
         RETURNING notification_id AS id)
       SELECT id FROM a`,
      [id, attempt, clip(error)],
    );
    return rows.length > 0;
  }

  /**
   * Messages whose worker held them past the lease without recording an outcome. Handed over (markHandedOver),
   * or claimed by a worker that does not store the mark (handover_tracked false: a rolling deploy), the message
   * may or may not have gone out: failed 'in doubt' and never sent again automatically (at most once). Not
   * handed over, nothing reached the server: the attempt reads 'retry' and the message is due again (the
   * re-drive's overdue read gives it its next attempt), unless it is `giveUpMs` old (or resent that long ago),
   * when it is abandoned as a send that kept failing would be.
   *
   * Decided on the attempt row as its UPDATE locks it, not on the statement's snapshot: a mark committed while
   * this waited for the row is seen (an UPDATE re-reads a row it waited for), and a mark that waits for this
   * finds the attempt no longer 'sending' and sends nothing (a review: an EXISTS on the snapshot missed it).
   */
  async failInDoubt(giveUpMs: number): Promise<Array<{ id: string; channel: string; outcome: 'in_doubt' | 'retry' | 'abandoned' }>> {
    return this.dataSource.query<Array<{ id: string; channel: string; outcome: 'in_doubt' | 'retry' | 'abandoned' }>>(
      `WITH lapsed AS (
         SELECT n.id, n.attempts, n.channel,
                COALESCE(n.resent_at, n.created_at) < now() - $1::int * interval '1 millisecond' AS too_old
           FROM notifications n WHERE n.status = 'pending' AND n.lease_until < now()
            FOR UPDATE OF n SKIP LOCKED)
       , a AS (
         UPDATE notification_attempts a
            SET outcome = CASE WHEN NOT a.handover_tracked OR a.handed_over_at IS NOT NULL THEN 'in_doubt'
                               WHEN l.too_old THEN 'abandoned' ELSE 'retry' END,
                finished_at = now(),
                error = CASE WHEN NOT a.handover_tracked OR a.handed_over_at IS NOT NULL THEN a.error
                             ELSE 'the worker stopped before handing the message over' END
           FROM lapsed l WHERE a.notification_id = l.id AND a.attempt = l.attempts AND a.outcome = 'sending'
         RETURNING a.notification_id AS id, a.outcome)
       , n AS (
         UPDATE notifications x
            SET status = CASE COALESCE(a.outcome, 'in_doubt') WHEN 'retry' THEN 'pending' WHEN 'abandoned' THEN 'abandoned' ELSE 'failed' END,
                lease_until = NULL,
                next_attempt_at = CASE WHEN a.outcome = 'retry' THEN now() ELSE x.next_attempt_at END,
                last_error = CASE COALESCE(a.outcome, 'in_doubt')
                  WHEN 'retry' THEN 'the worker stopped before handing the message over; tried again'
                  WHEN 'abandoned' THEN 'the worker stopped before handing the message over, past the give-up age; not sent'
                  ELSE 'in doubt: the worker stopped between handing the message over and recording the outcome; not resent, to avoid a duplicate' END
           FROM lapsed l LEFT JOIN a ON a.id = l.id WHERE x.id = l.id
         RETURNING x.id, l.channel, COALESCE(a.outcome, 'in_doubt') AS outcome)
       SELECT id, channel, outcome FROM n`,
      [giveUpMs],
    );
  }

  /**
   * Marks attempt n's message as handed over, just before its bytes reach the server: only while the attempt
   * still holds its lease (false otherwise, and nothing may be sent: the re-drive may have given the message to
   * another attempt).
   */
  async markHandedOver(id: string, attempt: number): Promise<boolean> {
    const rows = await this.dataSource.query<unknown[]>(
      `WITH m AS (
         UPDATE notification_attempts a SET handed_over_at = now()
           FROM notifications n
          WHERE n.id = $1 AND n.attempts = $2 AND n.lease_until > now() AND ${PENDING}
            AND a.notification_id = n.id AND a.attempt = n.attempts AND a.outcome = 'sending'
         RETURNING a.id)
       SELECT id FROM m`,
      [id, attempt],
    );
    return rows.length > 0;
  }

  /** Pending messages due for longer than graceMs and held by nobody: each should have a job by now. */
  async overdue(graceMs: number, limit: number): Promise<DueNotification[]> {
    return this.dataSource.query<DueNotification[]>(
      `SELECT id, attempts + 1 AS attempt FROM notifications
        WHERE status = 'pending' AND lease_until IS NULL AND next_attempt_at < now() - $1::int * interval '1 millisecond'
        ORDER BY next_attempt_at LIMIT $2`,
      [graceMs, limit],
    );
  }

  /** One message, with the outcome of its last attempt (null before the first). */
  async get(id: string): Promise<(StoredNotification & { lastOutcome: AttemptOutcome | null }) | null> {
    const e = await this.rows.findOneBy({ id });
    if (!e) return null;
    const [last] = await this.dataSource.query<Array<{ outcome: AttemptOutcome }>>(
      `SELECT outcome FROM notification_attempts WHERE notification_id = $1 AND attempt = $2`,
      [id, e.attempts],
    );
    return { ...toStored(e), lastOutcome: last?.outcome ?? null };
  }

  /**
   * Makes a message that did not go out (failed, abandoned) pending again, due now, with resent_at = now (its
   * retry schedule starts again) and no last_error, in the caller's transaction: only while it is still at
   * attempt `attempts` and `status`, as the caller read and judged it (resendRefusal). Its attempt number
   * moves only forward, so the row's lock and the re-check of the row as committed let one of several
   * resends at once through, and never one decided on an older attempt (a last outcome since in doubt).
   * Returns the message as reopened; null when it is no longer as read.
   */
  async reopen(em: EntityManager, id: string, read: { attempts: number; status: 'failed' | 'abandoned' }): Promise<StoredNotification | null> {
    const rows = await em.query<Array<{ id: string }>>(
      `WITH reopened AS (
         UPDATE notifications SET status = 'pending', next_attempt_at = now(), resent_at = now(), last_error = NULL
          WHERE id = $1 AND attempts = $2 AND status = $3 AND lease_until IS NULL
         RETURNING id)
       SELECT id FROM reopened`,
      [id, read.attempts, read.status],
    );
    if (rows.length === 0) return null;
    return toStored(await em.getRepository(NotificationEntity).findOneByOrFail({ id }));
  }

  /** The messages of one request, oldest first. */
  async forRequest(requestId: string): Promise<StoredNotification[]> {
    return (await this.rows.find({ where: { requestId }, order: { createdAt: 'ASC', kind: 'ASC', channel: 'ASC' } })).map(toStored);
  }

  /** Newest first; `limit + 1` rows tell the caller whether more exist. */
  async list(f: { statuses: NotificationStatus[]; requestId?: string; limit: number; offset: number }): Promise<StoredNotification[]> {
    const rows = await this.rows.find({
      where: { status: In(f.statuses), ...(f.requestId ? { requestId: f.requestId } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: f.limit,
      skip: f.offset,
    });
    return rows.map(toStored);
  }

}

interface ClaimRow {
  id: string;
  kind: NotificationKind;
  channel: NotificationChannel;
  to: string;
  request_id: string;
  plan_id: string | null;
  period_index: number | null;
  due_at: Date | null;
  message_id: string;
  created_at: Date;
  attempts: number;
}

function toStored(e: NotificationEntity): StoredNotification {
  return {
    id: e.id, kind: e.kind, channel: e.channel, to: e.to, requestId: e.requestId, planId: e.planId, periodIndex: e.periodIndex,
    dueAt: e.dueAt, status: e.status, messageId: e.messageId, attempts: e.attempts, nextAttemptAt: e.nextAttemptAt,
    lastError: e.lastError, sentAt: e.sentAt, createdAt: e.createdAt, resentAt: e.resentAt,
  };
}
