import type { DataSource } from 'typeorm';
import { createDataSource } from '../../src/database/data-source';
import { WebhookAttemptEntity } from '../../src/modules/webhooks/webhook-attempt.entity';
import { WebhookEventEntity } from '../../src/modules/webhooks/webhook-event.entity';
import { WebhookEventsRepository } from '../../src/modules/webhooks/webhook-events.repository';
import { RequestFactsPort } from '../../src/modules/webhooks/request-facts.port';
import { partnerWithEvents } from '../factories/events';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import type { Receiver } from '../support/receiver';

/*
 * The delivery worker's claim and record statements, one attempt at a time (a partner with one attempt in
 * flight claims and records batches of one): they store what they should, and Postgres keeps a generic plan
 * for them instead of planning every call again (which cost more Postgres CPU than running them; see
 * WebhookEventsRepository.claimMany). One pool connection, so every call runs on the session asked about.
 */
const ATTEMPTS = 8;
/**
 * Other events, never to be delivered: with a table of a few rows every plan is cheap and Postgres takes the
 * generic one whatever the statement; the choice above shows at the size of a table in use.
 */
const OTHER_EVENTS = 20_000;

let svc: TestService;
let receiver: Receiver;
let oneConnection: DataSource;
let ids: string[];
let others: string[] = [];

beforeAll(async () => {
  svc = await startService(); // no worker: the events stay for the calls below
  const partner = await partnerWithEvents(svc, ATTEMPTS, 'ok');
  ({ receiver, ids } = partner);
  const rows = await sql<{ id: string }>(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
     SELECT $1, $2, 'payment.proof_attached', true, false, 'skipped' FROM generate_series(1, $3) RETURNING id`,
    [partner.partnerId, partner.requestId, OTHER_EVENTS],
  );
  others = rows.map((r) => r.id);
  oneConnection = await createDataSource(svc.config.databaseUrl, 1).initialize();
});
afterAll(async () => {
  await sql(`ALTER TABLE webhook_events RESET (autovacuum_enabled)`);
  await sql(`UPDATE webhook_events SET state = 'abandoned' WHERE id = ANY($1) AND state IN ('pending','delivering')`, [ids]);
  await sql(`DELETE FROM webhook_events WHERE id = ANY($1)`, [others]);
  await oneConnection?.destroy();
  await closeSql();
  await receiver?.close();
  await svc?.close();
});

it('claims and records batches of one with a generic plan, storing each attempt once', async () => {
  const repo = new WebhookEventsRepository(
    oneConnection, oneConnection.getRepository(WebhookEventEntity), oneConnection.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  for (const eventId of ids) {
    const [claimed] = await repo.claimMany([{ eventId, attempt: 1 }]);
    expect(claimed).toMatchObject({ id: eventId, seriesBase: 0, endpoint: { enabled: true } });
    // With the request as it stands (the payload's fields), read in the same statement.
    const [stored] = await sql<{ merchant_id: string; proof_status: string }>(`SELECT merchant_id, proof_status FROM payment_requests WHERE id = $1`, [claimed!.requestId]);
    expect(claimed!.request).toMatchObject({ requestId: claimed!.requestId, merchantId: stored.merchant_id, proofStatus: stored.proof_status });
    const post = { statusCode: 200, durationMs: 3, errorClass: null };
    expect(await repo.record({ eventId, attempt: 1, startedAt: new Date(), post, outcome: 'delivered', delayMs: 0 })).toBe(true);
    // Recorded: neither a second claim nor a second record of attempt 1 takes effect.
    expect(await repo.claimMany([{ eventId, attempt: 1 }])).toEqual([null]);
    expect(await repo.record({ eventId, attempt: 1, startedAt: new Date(), post, outcome: 'delivered', delayMs: 0 })).toBe(false);
  }
  const events = await sql<{ state: string; attempts: number; n: number }>(
    `SELECT e.state, e.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS n
       FROM webhook_events e WHERE e.id = ANY($1)`,
    [ids],
  );
  expect(events).toEqual(ids.map(() => ({ state: 'delivered', attempts: 1, n: 1 })));

  // Postgres tries five custom plans first; from then on a statement it keeps replanning shows none generic.
  const plans = await oneConnection.query<Array<{ name: string; generic: number; custom: number }>>(
    `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
      WHERE name IN ('webhook_claim', 'webhook_record') ORDER BY name`,
  );
  expect(plans).toEqual([
    { name: 'webhook_claim', generic: 2 * ATTEMPTS - 5, custom: 5 },
    { name: 'webhook_record', generic: 2 * ATTEMPTS - 5, custom: 5 },
  ]);
});

it('records an attempt and claims the next one in one statement, with a generic plan; a claim of the attempt being recorded waits for the next statement', async () => {
  const more = await partnerWithEvents(svc, ATTEMPTS, 'ok');
  ids = [...ids, ...more.ids]; // abandoned at the end with the others
  await more.receiver.close();
  const repo = new WebhookEventsRepository(
    oneConnection, oneConnection.getRepository(WebhookEventEntity), oneConnection.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  const post = { statusCode: 200, durationMs: 3, errorClass: null };
  const delivered = (eventId: string) => ({ eventId, attempt: 1, startedAt: new Date(), post, outcome: 'delivered' as const, delayMs: 0 });
  expect(await repo.claim({ eventId: more.ids[0], attempt: 1 })).toMatchObject({ id: more.ids[0] });
  for (let i = 1; i < more.ids.length; i++) {
    // Asked in the same turn of the event loop, as a slot's run-on does: one statement.
    const [recorded, claimed] = await Promise.all([repo.record(delivered(more.ids[i - 1])), repo.claim({ eventId: more.ids[i], attempt: 1 })]);
    expect(recorded).toBe(true);
    expect(claimed).toMatchObject({ id: more.ids[i], seriesBase: 0, request: { requestId: more.requestId } });
  }
  // A duplicate job's claim of the attempt being recorded runs after the record, and finds it taken.
  const last = more.ids[more.ids.length - 1];
  const [recorded, duplicate] = await Promise.all([repo.record(delivered(last)), repo.claim({ eventId: last, attempt: 1 })]);
  expect(recorded).toBe(true);
  expect(duplicate).toBeNull();
  const events = await sql<{ state: string; attempts: number; n: number }>(
    `SELECT e.state, e.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS n
       FROM webhook_events e WHERE e.id = ANY($1)`,
    [more.ids],
  );
  expect(events).toEqual(more.ids.map(() => ({ state: 'delivered', attempts: 1, n: 1 })));
  const plans = await oneConnection.query<Array<{ generic: number; custom: number }>>(
    `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = 'webhook_record_and_claim'`,
  );
  expect(plans).toEqual([{ generic: ATTEMPTS - 1 - 5, custom: 5 }]);
});

/**
 * How each scan of webhook_events in a plan (EXPLAIN FORMAT JSON) finds its rows: the index it reads ('Seq Scan'
 * for none; a bitmap scan by the index under it).
 */
function eventScans(node: PlanNode, out: string[] = []): string[] {
  if (node['Relation Name'] === 'webhook_events' && node['Node Type'] !== 'ModifyTable') {
    const bitmapIndexes = (n: PlanNode): string[] => [...(n['Index Name'] ? [n['Index Name']] : []), ...(n.Plans ?? []).flatMap(bitmapIndexes)];
    out.push(node['Node Type'] === 'Bitmap Heap Scan' ? bitmapIndexes(node).join('+') : node['Index Name'] ?? node['Node Type']);
  }
  for (const child of node.Plans ?? []) eventScans(child, out);
  return out;
}
interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }

it('finds a batch by its ids, not by reading the backlog, when the statistics say few events are open', async () => {
  const repo = new WebhookEventsRepository(
    oneConnection, oneConnection.getRepository(WebhookEventEntity), oneConnection.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  // The last ANALYZE saw almost no open event; a backlog builds up after it (autovacuum kept from analyzing again).
  await sql(`ALTER TABLE webhook_events SET (autovacuum_enabled = false)`);
  await sql(`ANALYZE webhook_events`);
  const [{ partner_id: partnerId, request_id: requestId }] = await sql<{ partner_id: string; request_id: string }>(
    `SELECT partner_id, request_id FROM webhook_events WHERE id = $1`, [ids[0]],
  );
  const backlog = await sql<{ id: string }>(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state, next_attempt_at)
     SELECT $1, $2, 'payment.proof_attached', true, true, 'pending', now() FROM generate_series(1, 5000) RETURNING id`,
    [partnerId, requestId],
  );
  others = [...others, ...backlog.map((r) => r.id)];
  const [one] = backlog;
  await repo.markRelayed([one.id]); // prepares the relay's statement on this connection

  await oneConnection.query(`SET plan_cache_mode = force_generic_plan`);
  try {
    const explain = async (statement: string, args: string[]) => {
      const [row] = await oneConnection.query<Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>>(
        `EXPLAIN (FORMAT JSON) EXECUTE ${statement}(${args.join(', ')})`,
      );
      return eventScans(row['QUERY PLAN'][0].Plan);
    };
    const id = `'{${one.id}}'`;
    expect(await explain('webhook_claim', [id, `'{1}'`])).toEqual(['webhook_events_pkey']);
    expect(await explain('webhook_record', [id, `'{1}'`, `'{delivered}'`, `'{${new Date().toISOString()}}'`, `'{3}'`, `'{200}'`,
      `'{NULL}'`, `'{NULL}'`, `'{0}'`, `'{delivered}'`])).toEqual(['webhook_events_pkey']);
    expect(await explain('webhook_mark_relayed', [id])).toEqual(['webhook_events_pkey']);
  } finally {
    await oneConnection.query(`RESET plan_cache_mode`);
  }
});

it('answers a claim or record asked with an upper-case event id (a job queued before redelivery lower-cased ids) as it does the stored id', async () => {
  const more = await partnerWithEvents(svc, 3, 'ok');
  ids = [...ids, ...more.ids]; // abandoned at the end with the others
  await more.receiver.close();
  const repo = new WebhookEventsRepository(
    oneConnection, oneConnection.getRepository(WebhookEventEntity), oneConnection.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  const [a, b, c] = more.ids.map((id) => id.toUpperCase());
  const post = { statusCode: 200, durationMs: 3, errorClass: null };
  const delivered = (eventId: string) => ({ eventId, attempt: 1, startedAt: new Date(), post, outcome: 'delivered' as const, delayMs: 0 });
  // Claimed alone, then in one statement with a record, then through claimMany: each answers the event (it was
  // claimed in Postgres and answered null, so the attempt waited for the re-drive's stall check).
  expect(await repo.claim({ eventId: a, attempt: 1 })).toMatchObject({ id: more.ids[0] });
  const [recordedA, claimedB] = await Promise.all([repo.record(delivered(a)), repo.claim({ eventId: b, attempt: 1 })]);
  expect(recordedA).toBe(true);
  expect(claimedB).toMatchObject({ id: more.ids[1] });
  expect(await repo.claimMany([{ eventId: c, attempt: 1 }])).toEqual([expect.objectContaining({ id: more.ids[2] })]);
  const [recordedB, recordedC] = await Promise.all([repo.record(delivered(b)), repo.record(delivered(c))]);
  expect([recordedB, recordedC]).toEqual([true, true]);
  // Either spelling is the same attempt: recorded once.
  expect(await repo.record(delivered(more.ids[2]))).toBe(false);
  const events = await sql<{ state: string; attempts: number; n: number }>(
    `SELECT e.state, e.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.event_id = e.id) AS n
       FROM webhook_events e WHERE e.id = ANY($1)`,
    [more.ids],
  );
  expect(events).toEqual(more.ids.map(() => ({ state: 'delivered', attempts: 1, n: 1 })));
});

it('lists for the gate’s seeding the attempts claimed within a lease, with what is left of it; one claimed longer ago is not in flight', async () => {
  const more = await partnerWithEvents(svc, 3, 'ok');
  ids = [...ids, ...more.ids]; // abandoned at the end with the others
  await more.receiver.close();
  const [old, recent] = more.ids; // the third stays pending
  await sql(`UPDATE webhook_events SET state = 'delivering', last_attempt_at = now() - interval '10 seconds' WHERE id = $1`, [old]);
  await sql(`UPDATE webhook_events SET state = 'delivering', last_attempt_at = now() - interval '1 second' WHERE id = $1`, [recent]);
  const listed = (await svc.app.get(WebhookEventsRepository).claimedAttempts(5_000)).filter((a) => more.ids.includes(a.id));
  expect(listed).toEqual([{ id: recent, attempt: 1, partnerId: more.partnerId, leaseLeftMs: expect.any(Number) }]);
  // 5 s from a claim 1 s ago, less the time since the UPDATE.
  expect(listed[0].leaseLeftMs).toBeGreaterThan(2_000);
  expect(listed[0].leaseLeftMs).toBeLessThanOrEqual(4_000);
});
