import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager, type Repository } from 'typeorm';
import type { PostOutcome } from './webhook-poster';
import type { DueAttempt } from './webhook-delivery.queue';
import type { AttemptOutcome } from './delivery-policy';
import type { EventKind } from './event-outbox';
import { RequestFactsPort, type RequestFacts } from './request-facts.port';
import { answerAll, type BatchedCall, MicroBatch } from '../../common/micro-batch';
import { preparedQuery } from '../../database/prepared';
import { checkIn, oneOf } from '../../database/state-test';
import { WebhookAttemptEntity } from './webhook-attempt.entity';
import { DELIVERY_STATES, type DeliveryState, WebhookEventEntity } from './webhook-event.entity';

/** An outbox row claimed for one attempt, with the partner's endpoint as it stands at the claim. */
export interface ClaimedEvent {
  id: string;
  event: EventKind;
  partnerId: string;
  requestId: string;
  testMode: boolean;
  recordedAt: Date;
  /** No endpoint row counts as switched off. */
  endpoint: { url: string | null; enabled: boolean; secret: string | null; previousSecret: string | null };
  /** Number of the last attempt that ended a series (delivered or abandoned); 0 when none did. */
  seriesBase: number;
  /** The request as it stands at the claim (the payload's fields); undefined if it is gone. */
  request: RequestFacts | undefined;
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
const MAX_ERROR_MESSAGE = 500;
/** Rows a merged page of the deliveries list may read at most, and partners it may merge (see partnersToMerge). */
const MERGE_BUDGET = 20_000;
const MAX_MERGED_PARTNERS = 50;

/**
 * Rows are locked in id order, so two batches that share an event (only duplicate jobs do) wait for each
 * other instead of deadlocking. Not across the two halves of the joint statement (steps(): the recorded rows
 * in id order, then the claimed ones): with duplicate jobs on two events at once it can deadlock with another
 * batch; Postgres then fails one, and its halves run again apart.
 */
function inIdOrder<T extends { eventId: string }>(xs: T[]): T[] {
  return xs
    .map((x) => ({ x, id: x.eventId.toLowerCase() }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map(({ x }) => x);
}

/**
 * An attempt's key for matching the rows a statement returns (ids in Postgres's lower case) to the calls that
 * asked: a job or gate member spelled in upper case (a redelivery queued before 8f6590e) is the same event, and
 * was claimed in Postgres but answered null, so its attempt waited for the re-drive's stall check.
 */
function attemptKey(x: { eventId: string; attempt: number }): string {
  return `${x.eventId.toLowerCase()}/${x.attempt}`;
}

/** The states of a delivery not finished yet (webhook_events_open's predicate). */
const OPEN_STATES = ['pending', 'delivering'] as const satisfies readonly DeliveryState[];
export type OpenState = (typeof OPEN_STATES)[number];
/** The event is open (pending or delivering), or pending only, for the statements that take events by id (see oneOf). */
const OPEN = oneOf('e.state', OPEN_STATES, DELIVERY_STATES);
const PENDING = oneOf('e.state', ['pending'], DELIVERY_STATES);

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
  private readonly logger = new Logger('WebhookEvents');
  /**
   * The claims and records asked for in one turn of the event loop (see steps()), never split: a record and a
   * duplicate job's claim of the same event must share a batch, so that the claim waits for the record.
   */
  private readonly turn = MicroBatch.settling<Step, ClaimedEvent | null | boolean>((calls) => this.steps(calls), Infinity);
  /** The statements, built once: the claim's text reads the requests through the requests module's query (RequestFactsPort). */
  private readonly sql: { claim: string; record: string; recordAndClaim: string };

  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(WebhookEventEntity) private readonly events: Repository<WebhookEventEntity>,
    @InjectRepository(WebhookAttemptEntity) private readonly attemptLog: Repository<WebhookAttemptEntity>,
    requestFacts: RequestFactsPort,
  ) {
    const claimed = `SELECT c.*, w.url, COALESCE(w.enabled, false) AS enabled, w.secret, w.previous_secret, r.*
         FROM c LEFT JOIN webhook_endpoints w ON w.partner_id = c.partner_id
                LEFT JOIN LATERAL (${requestFacts.factsQuery('c.request_id')}) r ON true`;
    this.sql = {
      claim: `WITH ${claimCte(1)} ${claimed}`,
      record: `WITH ${recordCtes(1)} SELECT event_id, attempt FROM recorded`,
      // A row per attempt recorded (recorded_id, recorded_attempt; the rest null) and per event claimed (recorded_id
      // null). Not the recorded attempts as an array on every row: parsing it again for each row took a sixth
      // of the worker's CPU (bench profile, 10 partners).
      recordAndClaim: `WITH ${recordCtes(1)}, ${claimCte(RECORD_PARAMS + 1)}, claimed AS (${claimed})
       SELECT recorded.event_id AS recorded_id, recorded.attempt AS recorded_attempt, claimed.*
         FROM recorded FULL JOIN claimed ON false`,
    };
  }

  /**
   * Deliveries not finished yet (pending, delivering), by state, for the metrics scrape. Read through
   * webhook_events_open, so the read grows with the backlog, never with the history: counting every state
   * read the whole table, 357 ms at 1,000,000 events (2026-11-27), past the scrape's bound at a few million,
   * which 1,000 events/s reaches within an hour. Finished deliveries are counted as attempts are recorded
   * (MetricsService.countWebhookAttempt). Bounded on the server too (statement_timeout), so a slow count never
   * holds a pool connection after the scrape gave up on it.
   */
  async openDeliveries(timeoutMs: number): Promise<Array<{ state: OpenState; n: number }>> {
    return this.dataSource.transaction(async (em) => {
      await em.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      const rows = await em.query<Array<{ state: OpenState; n: number }>>(
        `SELECT state, count(*)::int AS n FROM webhook_events WHERE ${checkIn('state', OPEN_STATES)} AND deliver GROUP BY state`,
      );
      return OPEN_STATES.map((state) => ({ state, n: rows.find((r) => r.state === state)?.n ?? 0 }));
    });
  }

  /**
   * Writes an event in the caller's transaction. It is to be delivered ('pending') only when the partner's
   * endpoint is enabled with a URL at this moment; otherwise it is stored 'skipped' for good (no row = off).
   * One statement: the endpoint is read by the INSERT itself.
   */
  async insert(em: EntityManager, e: { partnerId: string; requestId: string; event: EventKind; testMode: boolean }): Promise<{ id: string; deliver: boolean }> {
    const on = `COALESCE((SELECT w.enabled AND w.url IS NOT NULL FROM webhook_endpoints w WHERE w.partner_id = :partnerId), false)`;
    const result = await em
      .createQueryBuilder()
      .insert()
      .into(WebhookEventEntity)
      .values({
        partnerId: e.partnerId,
        requestId: e.requestId,
        event: e.event,
        testMode: e.testMode,
        deliver: () => on,
        state: () => `CASE WHEN ${on} THEN 'pending' ELSE 'skipped' END`,
      })
      .setParameter('partnerId', e.partnerId)
      .returning(['id', 'deliver'])
      .updateEntity(false)
      .execute();
    const [row] = result.raw as Array<{ id: string; deliver: boolean }>;
    return { id: row.id, deliver: row.deliver };
  }

  /**
   * Takes attempt n of each event: only when the event is due for delivery and n follows the last recorded
   * attempt. A re-run of the same job after a crash ('delivering', attempts still n-1) takes it again, on
   * purpose: the crashed run recorded nothing. Null for a stale or duplicate job. One statement for all
   * (benchmarked hot path: the worker claims its concurrent attempts together, up to 100), prepared once per
   * connection like recordBatch's. It also reads each event's endpoint and request (the payload's fields,
   * through the requests module's query: RequestFactsPort). Read in a statement of their own, the requests cost
   * a third of the worker's statements: with them in the claim, 10 partners' deliveries cost the machine 0.63 ms
   * each instead of 0.72–0.79, and ran at 0.50–0.53 of the bare loop instead of 0.38–0.50 (2026-11-29).
   *
   * The arrays are read through `(SELECT $n)` so that Postgres keeps one generic plan for the statement. Given
   * the arrays as constants, a custom plan knows the batch's length and costs a batch of one or three below
   * the generic plan (which assumes ten rows), so Postgres plans every call again, and planning these
   * statements costs more than running them for a small batch (one row: 0.85 ms of Postgres CPU per claim
   * instead of 0.35, measured 2026-11-26). The plan is the same either way: the batch's rows probe the
   * primary key, the only index the state test leaves it (see oneOf).
   */
  async claimMany(xs: Array<{ eventId: string; attempt: number }>): Promise<Array<ClaimedEvent | null>> {
    const first = firstOfEach(xs.map(attemptKey));
    const sorted = inIdOrder(xs);
    const rows = await preparedQuery<ClaimRow>(
      this.dataSource.manager,
      'webhook_claim',
      this.sql.claim,
      claimParams(sorted),
    );
    return claimedOf(xs, first, rows);
  }

  /**
   * claimMany() for one attempt, in the batch of this turn of the event loop: with the records asked for in
   * the same turn, one statement for both (see steps()).
   */
  claim(x: ClaimAsk): Promise<ClaimedEvent | null> {
    return this.turn.submit({ claim: x }) as Promise<ClaimedEvent | null>;
  }

  /**
   * Stores attempt n and moves the event on; nothing happens unless the event still stands at attempt n-1.
   * Returns false when another run of the same attempt got there first. Records made together share one
   * statement (prepared, its arrays read through `(SELECT $n)`: see claimMany).
   */
  record(r: AttemptRecord): Promise<boolean> {
    return this.turn.submit({ record: r }) as Promise<boolean>;
  }

  /**
   * Runs the claims and records asked for in one turn of the event loop: in one statement when there are both
   * (a slot's attempt that ended is recorded as the partner's next attempt is claimed in it:
   * DeliveryProcessor.runNext), else the claim's or the record's own. A statement that fails fails each of its
   * callers (the joint one first runs its halves apart, see below). A claim of an event that a record of the
   * batch moves on (a duplicate job) waits for the next statement: one statement must not update a row twice.
   * Its halves may fail apart, so it answers each call itself (MicroBatch.settling).
   */
  private async steps(calls: Array<BatchedCall<Step, ClaimedEvent | null | boolean>>): Promise<void> {
    const claims: Array<BatchedCall<ClaimAsk, ClaimedEvent | null>> = [];
    const records: Array<BatchedCall<AttemptRecord, boolean>> = [];
    for (const { input, resolve, reject } of calls) {
      if ('claim' in input) claims.push({ input: input.claim, resolve, reject });
      else records.push({ input: input.record, resolve, reject });
    }
    const recordedNow = new Set(records.map((r) => r.input.eventId.toLowerCase()));
    const now: typeof claims = [];
    const later: typeof claims = [];
    for (const c of claims) (recordedNow.has(c.input.eventId.toLowerCase()) ? later : now).push(c);
    if (records.length === 0) return answerAll(now, (xs) => this.claimMany(xs));
    if (now.length === 0) await answerAll(records, (xs) => this.recordBatch(xs));
    else {
      const both = await this.recordAndClaim(records.map((r) => r.input), now.map((c) => c.input)).catch((e: Error) => {
        this.logger.warn(`record and claim statement failed (${e.message}); its halves run apart`);
        return null;
      });
      if (both) {
        records.forEach((w, i) => w.resolve(both.recorded[i]));
        now.forEach((w, i) => w.resolve(both.claimed[i]));
      } else {
        // One half's failure (a claim Postgres refused) must not be the other's: an attempt sent and not
        // recorded is sent again. Each half again in its own statement; with Postgres away both fail again.
        await Promise.all([answerAll(records, (xs) => this.recordBatch(xs)), answerAll(now, (xs) => this.claimMany(xs))]);
      }
    }
    if (later.length) await answerAll(later, (xs) => this.claimMany(xs));
  }

  private async recordAndClaim(xs: AttemptRecord[], cs: ClaimAsk[]): Promise<{ recorded: boolean[]; claimed: Array<ClaimedEvent | null> }> {
    const firstRecord = firstOfEach(xs.map(attemptKey));
    const firstClaim = firstOfEach(cs.map(attemptKey));
    const rows = await preparedQuery<ClaimRow & { recorded_id: string | null; recorded_attempt: number | null }>(
      this.dataSource.manager,
      'webhook_record_and_claim',
      this.sql.recordAndClaim,
      [...recordParams(inIdOrder(xs.filter((_, i) => firstRecord[i]))), ...claimParams(inIdOrder(cs))],
    );
    const done = new Set(rows.flatMap((r) => (r.recorded_id === null ? [] : [attemptKey({ eventId: r.recorded_id, attempt: r.recorded_attempt! })])));
    return {
      recorded: xs.map((x, i) => firstRecord[i] && done.has(attemptKey(x))),
      claimed: claimedOf(cs, firstClaim, rows.filter((r) => r.recorded_id === null)),
    };
  }

  private async recordBatch(xs: AttemptRecord[]): Promise<boolean[]> {
    const first = firstOfEach(xs.map(attemptKey));
    const rs = inIdOrder(xs.filter((_, i) => first[i]));
    const rows = await preparedQuery<{ event_id: string; attempt: number }>(
      this.dataSource.manager,
      'webhook_record',
      this.sql.record,
      recordParams(rs),
    );
    const done = new Set(rows.map((r) => attemptKey({ eventId: r.event_id, attempt: r.attempt })));
    return xs.map((x, i) => first[i] && done.has(attemptKey(x)));
  }

  /**
   * Marks freshly committed events as relayed; returns those that are to be delivered, with their next attempt.
   * The API's after-commit path, once per committing turn: prepared, its array read through `(SELECT $1)` so a
   * generic plan is kept (see claimMany).
   */
  markRelayed(eventIds: string[]): Promise<DueAttempt[]> {
    return preparedQuery<DueAttempt>(
      this.dataSource.manager,
      'webhook_mark_relayed',
      `UPDATE webhook_events e SET relayed_at = now(), next_attempt_at = COALESCE(e.next_attempt_at, now())
        WHERE e.id = ANY((SELECT $1)::uuid[])
          -- Not once attempted: the re-drive got there first (a relay that ran late), and a retry waits its backoff.
          AND e.deliver AND ${PENDING} AND e.relayed_at IS NULL AND e.attempts = 0
        RETURNING e.id, e.attempts + 1 AS attempt, e.partner_id AS "partnerId"`,
      [eventIds],
    );
  }

  /**
   * Events that should have a job by now but may have lost it: pending and due for longer than graceMs, or
   * 'delivering' for longer than an attempt can take (its worker may have died: `stalled`). Most of a busy
   * partner's overdue events are merely waiting in its gate, so the batch takes each partner's oldest in
   * turn (every partner's first, then every partner's second, …): a partner with more than `limit` waiting
   * never hides another partner's lost event from the re-drive.
   *
   * Reads only what it can return (issue 14: ranking every overdue event took 4 s at 1,000,000 waiting): the
   * partners with open events are walked on webhook_events_open (partner_id, next_attempt_at) one index probe
   * each, and each gives at most `limit` of its oldest, numbered in its own turn order, so only a top-`limit`
   * sort spans partners (100 partners × 2,000 overdue: 0.2 s; ranked across partners it spilled to disk,
   * 0.3–0.7 s).
   * A pending event's due time is next_attempt_at, or recorded_at while it was never relayed (next_attempt_at
   * null: the process stopped between commit and relay): those sit at the end of their partner's range and are
   * read by a second probe. Stalled attempts are a third probe, on webhook_events_partner (partner_id, state):
   * by their claim time, whatever their due time (an attempt may be claimed before next_attempt_at, e.g. a late
   * relay of an event the re-drive had already tried), and few (the gate bounds each partner's in flight).
   */
  async overdue(graceMs: number, attemptMaxMs: number, limit: number): Promise<DueAttempt[]> {
    const pending = `e.partner_id = p.partner_id AND e.state = 'pending' AND e.deliver`;
    const columns = `e.id, e.attempts, e.partner_id, e.state = 'delivering' AS stalled`;
    return this.dataSource.manager.query<DueAttempt[]>(
      `WITH RECURSIVE partners AS (
         (SELECT e.partner_id FROM webhook_events e WHERE e.state IN ('pending','delivering') ORDER BY e.partner_id LIMIT 1)
         UNION ALL
         SELECT (SELECT e.partner_id FROM webhook_events e
                  WHERE e.state IN ('pending','delivering') AND e.partner_id > p.partner_id ORDER BY e.partner_id LIMIT 1)
           FROM partners p WHERE p.partner_id IS NOT NULL),
       due AS (
         SELECT o.* FROM partners p CROSS JOIN LATERAL (SELECT u.*, row_number() OVER (ORDER BY u.due, u.id) AS turn FROM (
           (SELECT ${columns}, e.next_attempt_at AS due FROM webhook_events e
             WHERE ${pending} AND e.next_attempt_at < now() - $1 * interval '1 millisecond'
             ORDER BY e.next_attempt_at, e.id LIMIT $3)
           UNION ALL
           (SELECT ${columns}, e.recorded_at AS due FROM webhook_events e
             WHERE ${pending} AND e.next_attempt_at IS NULL AND e.recorded_at < now() - $1 * interval '1 millisecond'
             ORDER BY e.recorded_at, e.id LIMIT $3)
           UNION ALL
           (SELECT ${columns}, COALESCE(e.next_attempt_at, e.recorded_at) AS due FROM webhook_events e
             WHERE e.partner_id = p.partner_id AND e.state = 'delivering' AND e.deliver
               AND e.last_attempt_at < now() - $2 * interval '1 millisecond'
             ORDER BY e.last_attempt_at, e.id LIMIT $3)) u) o
          WHERE p.partner_id IS NOT NULL)
       SELECT id, attempts + 1 AS attempt, partner_id AS "partnerId", stalled
         FROM due
        ORDER BY turn, due, id
        LIMIT $3`,
      [graceMs, attemptMaxMs, limit],
    );
  }

  /**
   * The attempts claimed and not recorded yet ('delivering') that may still be in flight: claimed less than
   * `attemptMaxMs` ago (the poster's deadline plus WEBHOOK_STALL_MARGIN_MS, as the re-drive's stall check), each
   * with how much of that is left (ms, by Postgres's clock: a duration, whatever the reader's clock says). The
   * attempt claimed is attempts + 1. For PartnerGate, to give them back their slots when Redis lost the gate's
   * state: once per such loss, never per delivery. The partners with open events are walked on
   * webhook_events_open, one probe each, and each one's claimed events read on webhook_events_partner (as
   * overdue's third probe), so a partner's pending backlog is not read.
   */
  claimedAttempts(attemptMaxMs: number): Promise<Array<{ id: string; attempt: number; partnerId: string; leaseLeftMs: number }>> {
    return this.dataSource.query(
      `WITH RECURSIVE partners AS (
         (SELECT e.partner_id FROM webhook_events e WHERE e.state IN ('pending','delivering') ORDER BY e.partner_id LIMIT 1)
         UNION ALL
         SELECT (SELECT e.partner_id FROM webhook_events e
                  WHERE e.state IN ('pending','delivering') AND e.partner_id > p.partner_id ORDER BY e.partner_id LIMIT 1)
           FROM partners p WHERE p.partner_id IS NOT NULL)
       SELECT e.id, e.attempts + 1 AS attempt, e.partner_id AS "partnerId",
              ceil($1 - extract(epoch FROM now() - e.last_attempt_at) * 1000)::int AS "leaseLeftMs"
         FROM partners p JOIN webhook_events e ON e.partner_id = p.partner_id AND e.state = 'delivering' AND e.deliver
        WHERE e.last_attempt_at > now() - $1 * interval '1 millisecond'`,
      [attemptMaxMs],
    );
  }

  /** A page of deliveries in `states`, newest first. */
  async list(f: { partnerId?: string; requestId?: string; states: readonly DeliveryState[]; limit: number; offset: number }): Promise<WebhookEventEntity[]> {
    const { states } = f;
    if (!f.requestId) {
      const partners = f.partnerId ? [f.partnerId] : await this.partnersToMerge(states.length * (f.offset + f.limit));
      if (partners) return this.newestPage(partners, states, f.limit, f.offset);
    }
    // A request's events are few (webhook_events_request); across too many partners, the outbox sorted.
    const q = this.events.createQueryBuilder('e');
    if (f.requestId) q.andWhere('e.request_id = :requestId', { requestId: f.requestId });
    if (f.partnerId) q.andWhere('e.partner_id = :partnerId', { partnerId: f.partnerId });
    q.andWhere('e.state IN (:...states)', { states: [...states] });
    return q.orderBy('e.recorded_at', 'DESC').addOrderBy('e.id', 'DESC').limit(f.limit).offset(f.offset).getMany();
  }

  /**
   * The partners with events, when a page merged from each one's newest reads few enough rows: each partner
   * gives up to `perPartner` (its states × offset + limit), and past MERGE_BUDGET rows in all (or
   * MAX_MERGED_PARTNERS partners: each partner and state is a branch Postgres plans, 32 ms to plan 500), a read of every
   * event sorted costs less (measured at 300,000 events: 20 partners' first page 11 ms merged
   * against 40 ms sorted, but 500 partners at offset 1,000 462 ms against 40, and 20,000 partners' first page
   * 761 ms). Null past the budget. Walked on webhook_events_partner, one probe per partner (a loose index
   * scan), and no further than the budget allows.
   */
  private async partnersToMerge(perPartner: number): Promise<string[] | null> {
    const most = Math.min(MAX_MERGED_PARTNERS, Math.floor(MERGE_BUDGET / perPartner));
    if (most < 1) return null;
    const rows = await this.dataSource.query<Array<{ partner_id: string }>>(
      `WITH RECURSIVE partners AS (
         (SELECT partner_id FROM webhook_events ORDER BY partner_id LIMIT 1)
         UNION ALL
         SELECT (SELECT e.partner_id FROM webhook_events e WHERE e.partner_id > p.partner_id ORDER BY e.partner_id LIMIT 1)
           FROM partners p WHERE p.partner_id IS NOT NULL)
       SELECT partner_id FROM partners WHERE partner_id IS NOT NULL LIMIT $1`,
      [most + 1],
    );
    return rows.length > most ? null : rows.map((r) => r.partner_id);
  }

  /**
   * A page of deliveries in `states`, newest first, of `partners`: one partner's (the portal's page, the admin
   * list by partner) or every partner's (the admin list, see partnersToMerge). webhook_events_partner is
   * ordered by recorded_at within each partner and state, so each partner's newest of each state are read in
   * order and merged (the index ends in id, so each read is in the list's order, no sort): a page reads at most
   * offset + limit rows per partner and state, then those events by key, whatever the history. Ordered by recorded_at over the rows as a
   * whole, a page read and sorted all of them: 197 ms at 900,000 events of one partner (0.7 ms this way,
   * measured 2026-11-27); the admin list across a few partners sorted the whole outbox (170 ms at 1.1M events,
   * 12 ms this way), or the whole backlog for `pending` during an outage. Each partner and state is a branch of
   * its own, the partner a parameter and the state a literal, so Postgres plans each on how many rows that
   * partner has in that state: given a partner it could not see (a LATERAL over the partners) or a state
   * (`(SELECT '<state>')`), it took a big partner's state for a few rows and read and sorted all of them (CI,
   * 2026-11-27). With id at the end of webhook_events_partner no read needs a sort, so even after an ANALYZE
   * that saw no backlog the ordered read mostly wins over webhook_events_open; but not always: with seventeen
   * partners' events in the table, every `pending` branch read its partner's whole backlog on
   * webhook_events_open and sorted it (row-reads.spec after webhooks-gate.spec in one jest worker, 2026-11-29),
   * the statistics taking each backlog for a row or two. So the page is read with sorts off (`SET LOCAL
   * enable_sort = off`, in a transaction of its own): each branch's ordered read is then the only plan without
   * a sort, whatever the statistics say, and only the merge of the branches' few rows is sorted. Hand-written:
   * the query builder has no UNION.
   */
  private async newestPage(partners: string[], states: readonly DeliveryState[], limit: number, offset: number): Promise<WebhookEventEntity[]> {
    if (partners.length === 0) return [];
    const newestOfEach = partners.flatMap((_, i) => states.map((state) => `(SELECT id, recorded_at FROM webhook_events
        WHERE partner_id = $${i + 4} AND state = '${state}' ORDER BY recorded_at DESC, id DESC LIMIT $1)`));
    const page = await this.dataSource.transaction(async (em) => {
      await em.query(`SET LOCAL enable_sort = off`);
      return em.query<Array<{ id: string }>>(
        `SELECT id FROM (${newestOfEach.join(' UNION ALL ')}) newest ORDER BY recorded_at DESC, id DESC LIMIT $2 OFFSET $3`,
        [offset + limit, limit, offset, ...partners],
      );
    });
    if (page.length === 0) return [];
    const byId = new Map((await this.events.findBy({ id: In(page.map((r) => r.id)) })).map((e) => [e.id, e]));
    return page.flatMap((r) => byId.get(r.id) ?? []);
  }

  get(eventId: string): Promise<WebhookEventEntity | null> {
    return this.events.findOneBy({ id: eventId });
  }

  attempts(eventId: string): Promise<WebhookAttemptEntity[]> {
    return this.attemptLog.find({ where: { eventId }, order: { attempt: 'ASC' } });
  }

  /**
   * Opens a new series of attempts for a finished delivery, keeping its id (the payload's delivery_id).
   * Attempt numbers continue, so job ids stay unique. Null when the event is not in a finished state.
   */
  async reopen(em: EntityManager, eventId: string): Promise<WebhookEventEntity | null> {
    const events = em.getRepository(WebhookEventEntity);
    const result = await events
      .createQueryBuilder()
      .update()
      .set({ state: 'pending', nextAttemptAt: () => 'now()' })
      .where('id = :eventId', { eventId })
      .andWhere(`deliver AND state IN ('delivered','abandoned')`)
      .updateEntity(false)
      .execute();
    return result.affected ? events.findOneBy({ id: eventId }) : null;
  }
}

/** An attempt to claim: the event and the attempt's number. */
export interface ClaimAsk {
  eventId: string;
  attempt: number;
}

/** One call of the claim and record batch (steps()). */
type Step = { claim: ClaimAsk } | { record: AttemptRecord };

/**
 * Takes the batch's attempts ($first: event ids, $first+1: attempt numbers) whose event is due for them: the
 * CTE `c`, returning each claimed event with its series base. See claimMany. The claim's time is read once its
 * row is locked (clock_timestamp(), not the statement's start): the re-drive's stall check and the gate's
 * seeding count the attempt's lease from it, and a wait for the row's lock is not part of the attempt's run.
 */
function claimCte(first: number): string {
  return `c AS (
         UPDATE webhook_events e SET state = 'delivering', last_attempt_at = clock_timestamp()
           FROM unnest((SELECT $${first}::uuid[]), (SELECT $${first + 1}::int[])) AS j(id, attempt)
          WHERE e.id = j.id AND e.attempts = j.attempt - 1 AND e.deliver AND ${OPEN}
         RETURNING j.attempt AS claimed_attempt, e.id, e.event, e.partner_id, e.request_id, e.test_mode, e.recorded_at,
                   (SELECT COALESCE(max(a.attempt), 0)::int FROM webhook_attempts a
                     WHERE a.event_id = e.id AND a.outcome <> 'retry') AS series_base)`;
}

function claimParams(cs: ClaimAsk[]): unknown[] {
  return [cs.map((x) => x.eventId), cs.map((x) => x.attempt)];
}

/** The record's parameters (recordParams), from $first on. */
const RECORD_PARAMS = 10;

/**
 * Stores the batch's attempts and moves their events on, each only if its event still stands at the attempt
 * before: the CTEs `j` (the attempts), `ev` (the events moved on) and `recorded` (the attempt rows stored:
 * event_id, attempt). See record.
 */
function recordCtes(first: number): string {
  const $ = (n: number) => `(SELECT $${first + n - 1}`;
  return `j AS (
         SELECT * FROM unnest(${$(1)}::uuid[]), ${$(2)}::int[]), ${$(3)}::text[]), ${$(4)}::timestamptz[]),
                              ${$(5)}::int[]), ${$(6)}::int[]), ${$(7)}::text[]), ${$(8)}::text[]),
                              ${$(9)}::int[]), ${$(10)}::text[]))
                AS j(id, attempt, state, started_at, duration_ms, status_code, error_class, error_message, delay_ms, outcome)),
       ev AS (
         UPDATE webhook_events e
            SET attempts = j.attempt, state = j.state, last_attempt_at = j.started_at,
                next_attempt_at = CASE WHEN j.state = 'pending' THEN now() + j.delay_ms * interval '1 millisecond' END,
                delivered_at = CASE WHEN j.state = 'delivered' THEN now() ELSE e.delivered_at END
           FROM j
          WHERE e.id = j.id AND e.attempts = j.attempt - 1 AND ${OPEN}
         RETURNING e.id, j.attempt),
       recorded AS (
         INSERT INTO webhook_attempts (event_id, attempt, started_at, duration_ms, status_code, error_class, error_message, outcome)
         SELECT j.id, j.attempt, j.started_at, j.duration_ms, j.status_code, j.error_class, j.error_message, j.outcome
           FROM j JOIN ev ON ev.id = j.id AND ev.attempt = j.attempt
         ON CONFLICT (event_id, attempt) DO NOTHING
         RETURNING event_id, attempt)`;
}

function recordParams(rs: AttemptRecord[]): unknown[] {
  return [
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
  ];
}

/** Each asked attempt's claimed event, in the order asked; the same attempt twice in one batch (a duplicate job): the second is null. */
function claimedOf(xs: ClaimAsk[], first: boolean[], rows: ClaimRow[]): Array<ClaimedEvent | null> {
  const byKey = new Map(rows.map((r) => [attemptKey({ eventId: r.id, attempt: r.claimed_attempt }), r]));
  return xs.map((x, i) => {
    const r = first[i] ? byKey.get(attemptKey(x)) : undefined;
    return r ? toClaimed(r) : null;
  });
}

interface ClaimRow extends Partial<RequestFacts> {
  claimed_attempt: number;
  id: string;
  event: EventKind;
  partner_id: string;
  request_id: string;
  test_mode: boolean;
  recorded_at: Date;
  series_base: number;
  url: string | null;
  enabled: boolean;
  secret: string | null;
  previous_secret: string | null;
}

function toClaimed(r: ClaimRow): ClaimedEvent {
  return {
    id: r.id,
    event: r.event,
    partnerId: r.partner_id,
    requestId: r.request_id,
    testMode: r.test_mode,
    recordedAt: r.recorded_at,
    endpoint: { url: r.url, enabled: r.enabled, secret: r.secret, previousSecret: r.previous_secret },
    seriesBase: r.series_base,
    request: r.requestId
      ? {
          requestId: r.requestId,
          merchantId: r.merchantId!,
          proofStatus: r.proofStatus!,
          proofSource: r.proofSource ?? null,
          txHash: r.txHash ?? null,
          payerAddress: r.payerAddress ?? null,
          metadata: r.metadata ?? null,
        }
      : undefined,
  };
}
