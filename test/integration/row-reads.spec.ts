import { randomBytes, randomUUID } from 'node:crypto';
import { NotificationEntity } from '../../src/modules/notifications/notification.entity';
import { NotificationsRepository } from '../../src/modules/notifications/notifications.repository';
import { PaymentRequestEntity } from '../../src/modules/requests/infrastructure/payment-request.entity';
import { RequestsRepository } from '../../src/modules/requests/infrastructure/requests.repository';
import { UnmatchedTransferEntity } from '../../src/modules/requests/infrastructure/unmatched-transfer.entity';
import { UnmatchedTransfersRepository } from '../../src/modules/requests/infrastructure/unmatched-transfers.repository';
import { WebhookAttemptEntity } from '../../src/modules/webhooks/webhook-attempt.entity';
import { DELIVERY_STATES, WebhookEventEntity } from '../../src/modules/webhooks/webhook-event.entity';
import { WebhookEventsRepository } from '../../src/modules/webhooks/webhook-events.repository';
import { RequestFactsPort } from '../../src/modules/webhooks/request-facts.port';
import { LISTED_STATES } from '../../src/modules/webhooks/deliveries.service';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { ExplainingDataSource } from '../support/explain';

/*
 * Statements the service runs per row (a claim, a cancel, a transfer's lookup) read the rows they need, not
 * every open row. Each statement is run through its repository, captured as TypeORM sent it, and explained
 * with its parameters (ExplainingDataSource).
 *
 * Those that take rows by key and also test a state must find them by the key whatever the statistics say
 * (src/database/state-test.ts, oneOf). Each table gets the outage pattern: the last ANALYZE saw almost no row
 * in the open state, then a backlog of open rows arrived (autovacuum kept from analyzing again). Before the
 * change the notifications' and the held transfers' statements read their table through a partial index on
 * the state (every open row) at this size. The request's cancel did so only at a larger size (300,000 past
 * requests at the ANALYZE, 30,000 live after it, expires_at past the statistics' maximum:
 * payment_requests_expiring read whole, 2.8 ms against 0.05), too slow to seed here; it is asserted all the same.
 *
 * The chain scan's lookups read one row per transfer and one per wallet (payment_requests_claimable has the
 * amount in its key since migration 1764000401500; before, every open request of the wallet was read), and
 * the expiry sweep's release of amounts reads the closed ones only (payment_requests_locked_until, 1764000401600;
 * before, a sequential scan of every locked request), and its expiry reads the lapsed ones through the two
 * deadline indexes (before, with all of its tests in one WHERE, the table). A partner's deliveries page reads
 * its page from each state's newest (before, every delivery of the partner, sorted), and so does the admin
 * list across partners, per partner (before, the whole outbox sorted); the metrics scrape counts the open
 * deliveries only (before, every delivery and attempt ever made).
 */
const HISTORY = 3000;
const BACKLOG = 2000;
const TABLES = ['payment_requests', 'notifications', 'unmatched_transfers'];

let svc: TestService;
let partner: TestPartner;
let merchant: { id: string };
let explaining: ExplainingDataSource;
/** The decided transfers the postpone case wrote (no request to find them by). */
let decidedTransfers: string[] = [];

beforeAll(async () => {
  svc = await startService();
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
  for (const t of TABLES) await sql(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
  explaining = await new ExplainingDataSource(svc.config.databaseUrl).initialize();
}, 60000);

afterAll(async () => {
  // Files of one worker share the database: nothing this file made may be sent, retried, scanned or held later.
  if (partner) {
    const mine = `SELECT id FROM payment_requests WHERE partner_id = '${partner.id}'`;
    await sql(`DELETE FROM notification_attempts WHERE notification_id IN (SELECT id FROM notifications WHERE request_id IN (${mine}))`);
    await sql(`DELETE FROM notifications WHERE request_id IN (${mine})`);
    await sql(`DELETE FROM unmatched_transfers WHERE pending_request_id IN (${mine}) OR tx_hash = ANY($1)`, [decidedTransfers]);
    await sql(`DELETE FROM webhook_events WHERE partner_id = $1 AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.event_id = webhook_events.id)`, [partner.id]);
    await sql(`UPDATE payment_requests SET amount_locked = false WHERE partner_id = $1`, [partner.id]);
  }
  for (const t of TABLES) await sql(`ALTER TABLE ${t} RESET (autovacuum_enabled)`);
  await explaining?.destroy();
  await closeSql();
  await svc?.close();
});

/** How each statement `run` sent reads `table` (see ExplainingDataSource.scansOf). */
async function scansOf(table: string, run: () => Promise<unknown>): Promise<string[][]> {
  return (await explaining.scansOf(table, run)).indexes;
}

/** `n` copies of request `id` (other amounts and keys), with `set` applied; their ids. */
async function cloneRequests(id: string, n: number, set: string): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate, amount,
       chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until, source)
     SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, '~' || gen_random_uuid(), fiat_amount, fiat_currency, rate, amount + g,
            chain_id, token_address, recipient, payment_mode, NULL, expires_at, claim_until, source
       FROM payment_requests, generate_series(1, $2) g WHERE id = $1 RETURNING id`,
    [id, n],
  );
  const ids = rows.map((r) => r.id);
  await sql(`UPDATE payment_requests SET ${set} WHERE id = ANY($1)`, [ids]);
  return ids;
}

it('a request is cancelled by its id, not by reading every live unpaid request', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4321 });
  await cloneRequests(seed.request_id, HISTORY,
    `status = 'voided', voided_at = now() - interval '2 days', amount_locked = false, expires_at = now() - interval '1 day', claim_until = now() - interval '1 day'`);
  await sql(`ANALYZE payment_requests`);
  const live = await cloneRequests(seed.request_id, BACKLOG, `amount_locked = false, expires_at = now() + interval '1 day', claim_until = now() + interval '2 days'`);
  const requests = new RequestsRepository(explaining.ds.getRepository(PaymentRequestEntity));
  const scope = { partnerId: partner.id, testMode: true };
  expect(await scansOf('payment_requests', () => requests.applyStatus(live[0], 'cancel', { scope }))).toEqual([['payment_requests_pkey']]);
  expect(await scansOf('payment_requests', () => requests.applyStatus(live[1], 'open', { scope }))).toEqual([['payment_requests_pkey']]);
});

it('a pending notification is read, claimed and recorded by its id, not by reading the backlog', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4322 });
  const ids = await cloneRequests(seed.request_id, HISTORY + BACKLOG, `amount_locked = false`);
  const notify = (xs: string[], status: string) => sql<{ id: string }>(
    `INSERT INTO notifications (id, kind, channel, "to", request_id, message_id, status)
     SELECT gen_random_uuid(), 'receipt', 'email', 'payer@example.com', r, gen_random_uuid()::text, $2 FROM unnest($1::uuid[]) r RETURNING id`,
    [xs, status],
  );
  await notify(ids.slice(0, HISTORY), 'sent');
  await sql(`ANALYZE notifications`);
  const backlog = (await notify(ids.slice(HISTORY), 'pending')).map((r) => r.id);
  const notifications = new NotificationsRepository(explaining.ds, explaining.ds.getRepository(NotificationEntity));
  const [a, b, c] = backlog;
  const byKey = [['notifications_pkey']];
  expect(await scansOf('notifications', () => notifications.due([a]))).toEqual(byKey);
  expect(await scansOf('notifications', () => notifications.waitingFor(a, 1))).toEqual(byKey);
  expect(await scansOf('notifications', () => notifications.noteUnsent(a, 1, 'smtp down'))).toEqual(byKey);
  const token = randomUUID();
  expect(await scansOf('notifications', () => notifications.claim(a, 1, 60_000, token))).toEqual(byKey);
  expect(await scansOf('notifications', () => notifications.claimedBy(a, 1, token))).toEqual(byKey);
  expect(await scansOf('notifications', () =>
    notifications.record({ id: a, attempt: 1, outcome: 'sent', error: null, response: '250 ok', delayMs: 0 }))).toEqual(byKey);
  expect(await scansOf('notifications', () => notifications.abandonUnsent(b, 1, 'no address'))).toEqual(byKey);
  expect(c).toBeDefined();
});

it('a retry round postpones a held transfer by its key, not by reading every held transfer', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4323 });
  const [r] = await sql<{ chain_id: string; token_address: string; recipient: string }>(
    `SELECT chain_id::text, token_address, recipient FROM payment_requests WHERE id = $1`, [seed.request_id]);
  const hold = (n: number, pending: string | null) => sql<{ tx_hash: string }>(
    `INSERT INTO unmatched_transfers
            (chain_id, tx_hash, log_index, block_number, token_address, from_address, to_address, value, reason, pending_request_id)
     SELECT $1, h, 0, 1, $2, $3, $3, 1, 'unconfirmed_unknown', $4 FROM unnest($5::text[]) h RETURNING tx_hash`,
    [r.chain_id, r.token_address, r.recipient, pending, Array.from({ length: n }, () => `0x${randomBytes(32).toString('hex')}`)],
  );
  decidedTransfers = (await hold(HISTORY, null)).map((u) => u.tx_hash);
  await sql(`ANALYZE unmatched_transfers`);
  const [held] = await hold(BACKLOG, seed.request_id);
  const lease = (await sql<{ lease: string }>(
    `UPDATE unmatched_transfers SET retry_lease = gen_random_uuid() WHERE tx_hash = $1 RETURNING retry_lease::text AS lease`, [held.tx_hash]))[0].lease;
  const transfers = new UnmatchedTransfersRepository(explaining.ds.getRepository(UnmatchedTransferEntity));
  const t = { txHash: held.tx_hash, logIndex: 0 } as Parameters<UnmatchedTransfersRepository['postpone']>[1];
  expect(await scansOf('unmatched_transfers', () => transfers.postpone(BigInt(r.chain_id), t, lease, 1000)))
    .toEqual([['unmatched_transfers_chain_id_tx_hash_log_index_key']]);
});

it('the chain scan names a transfer\'s request and lists the wallets to watch without reading every open request', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4324 });
  const open = await cloneRequests(seed.request_id, BACKLOG, `expires_at = now() + interval '1 hour', claim_until = now() + interval '2 hours'`);
  await sql(`ANALYZE payment_requests`);
  const [r] = await sql<{ chain_id: string; token_address: string; recipient: string; amount: string }>(
    `SELECT chain_id::text, token_address, recipient, amount::text FROM payment_requests WHERE id = $1`, [open[BACKLOG / 2]]);
  const requests = new RequestsRepository(explaining.ds.getRepository(PaymentRequestEntity));
  let found: string | null = null;
  const byAmount = await explaining.scansOf('payment_requests', async () => {
    found = await requests.claimableByAmount(BigInt(r.chain_id), r.token_address, r.recipient, BigInt(r.amount));
  }, { analyze: true });
  expect(found).toBe(open[BACKLOG / 2]);
  expect(byAmount).toMatchObject({ indexes: [['payment_requests_claimable']], rowsRead: 1 });
  let wallets: string[] = [];
  const recipients = await explaining.scansOf('payment_requests', async () => {
    wallets = await requests.claimableRecipients(BigInt(r.chain_id), r.token_address);
  }, { analyze: true });
  expect(wallets).toContain(r.recipient);
  // One probe per wallet (and one past the last), not one row per open request.
  expect(recipients.rowsRead).toBeLessThanOrEqual(wallets.length + 1);
});

it('the expiry sweep frees the amounts whose claim window closed by reading only those', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4325 });
  // An asset of its own, whose chain cursor has passed the closed requests' windows.
  const token = `0x${randomBytes(20).toString('hex')}`;
  const [{ chain_id: chainId }] = await sql<{ chain_id: string }>(`SELECT chain_id::text FROM payment_requests WHERE id = $1`, [seed.request_id]);
  await sql(`INSERT INTO chain_cursors (chain_id, token_address, last_block, last_block_time) VALUES ($1, $2, 1, now())`, [chainId, token]);
  await cloneRequests(seed.request_id, BACKLOG, `token_address = '${token}', claim_until = now() + interval '2 hours'`);
  const closed = await cloneRequests(seed.request_id, 30, `token_address = '${token}', amount = amount + 1000000, claim_until = now() - interval '1 hour'`);
  await sql(`ANALYZE payment_requests`);
  const requests = new RequestsRepository(explaining.ds.getRepository(PaymentRequestEntity));
  const reads = await scansOf('payment_requests', () => requests.releaseClosedAmounts());
  // One statement per full batch; each reads the index and the key only.
  expect(reads.map((r) => [...r].sort())).toEqual(reads.map(() => ['payment_requests_locked_until', 'payment_requests_pkey']));
  const [left] = await sql<{ closed: number; open: number }>(
    `SELECT count(*) FILTER (WHERE id = ANY($2) AND amount_locked)::int AS closed, count(*) FILTER (WHERE amount_locked)::int AS open
       FROM payment_requests WHERE token_address = $1`, [token, closed]);
  expect(left).toEqual({ closed: 0, open: BACKLOG });
});

it('the expiry sweep reads the lapsed requests through their deadline indexes, not the table', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4326 });
  // History whose deadlines have passed (voided: not open) beside open requests. At 1.5M rows (a reviewer's
  // measurement) the old single WHERE was estimated to find a quarter of the table lapsed and read all of it,
  // 317 ms; at this size it read both deadline indexes in one bitmap. The sweep now reads each index in its
  // deadline order, at most a batch, and updates by primary key.
  await cloneRequests(seed.request_id, HISTORY,
    `status = 'voided', voided_at = now(), amount_locked = false, expires_at = now() - interval '1 day', claim_until = now() - interval '1 day'`);
  // Lapsed long before anything another file left unswept, so they are the first of the sweep's batch.
  const lapsed = await cloneRequests(seed.request_id, 20, `amount_locked = false, expires_at = now() - interval '10 years'`);
  await sql(`ANALYZE payment_requests`);
  const requests = new RequestsRepository(explaining.ds.getRepository(PaymentRequestEntity));
  const reads = await scansOf('payment_requests', () => explaining.ds.transaction((em) => requests.expireLapsed(em, 1000)));
  expect(reads).toHaveLength(1);
  expect(reads[0].sort()).toEqual(['payment_requests_attached_expiring', 'payment_requests_expiring', 'payment_requests_pkey']);
  const [left] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM payment_requests WHERE id = ANY($1) AND status <> 'expired'`, [lapsed]);
  expect(left.n).toBe(0);
});

it('a partner\'s deliveries page reads the newest of each state, not every delivery of the partner', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4327 });
  // Finished deliveries only (none pending): nothing here is for a worker of a later file to send.
  await sql(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state, attempts, recorded_at)
     SELECT $1, $2, 'payment.proof_verified', true, g % 3 <> 2, (ARRAY['delivered','abandoned','skipped'])[1 + g % 3], 1,
            now() - (g / 2) * interval '1 second'
       FROM generate_series(1, $3) g`,
    [partner.id, seed.request_id, HISTORY],
  );
  await sql(`ANALYZE webhook_events`);
  const expected = await sql<{ id: string }>(
    `SELECT id FROM webhook_events WHERE partner_id = $1 AND state <> 'skipped' ORDER BY recorded_at DESC, id DESC LIMIT 50 OFFSET 100`, [partner.id]);
  const events = new WebhookEventsRepository(
    explaining.ds, explaining.ds.getRepository(WebhookEventEntity), explaining.ds.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  let page: WebhookEventEntity[] = [];
  const reads = await explaining.scansOf('webhook_events', async () => {
    page = await events.list({ partnerId: partner.id, states: LISTED_STATES, limit: 50, offset: 100 });
  }, { analyze: true });
  expect(page.map((e) => e.id)).toEqual(expected.map((e) => e.id));
  // The page's ids: at most offset + limit per state (then the page's 50 events by key, which at this size
  // Postgres rightly reads with a scan of the small table).
  // (An open state the partner has none of may be looked up in webhook_events_open: it reads nothing.)
  expect(reads.indexes[0].every((i) => i === 'webhook_events_partner' || i === 'webhook_events_open')).toBe(true);
  expect(reads.rowsReadEach[0]).toBeLessThanOrEqual(DELIVERY_STATES.length * 150);
});

it('the admin deliveries list across partners merges each partner\'s newest, also for a backlog after an ANALYZE that saw none', async () => {
  const other = await createPartner(svc);
  const otherMerchant = await createOnboardedMerchant(svc, other.testKey);
  const mine = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4330 });
  const theirs = await mustCreateRequest(svc, other.testKey, { account_id: otherMerchant.id, fiat_amount_int: 4331 });
  const history = (partnerId: string, requestId: string, n: number, states: string) => sql(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state, attempts, next_attempt_at, recorded_at)
     SELECT $1, $2, 'payment.proof_verified', true, true, (${states})[1 + g % cardinality(${states})], 1,
            CASE WHEN (${states})[1 + g % cardinality(${states})] = 'pending' THEN now() + interval '1 hour' END,
            now() - (g / 3) * interval '1 second'
       FROM generate_series(1, $3) g`,
    [partnerId, requestId, n],
  );
  try {
    await history(partner.id, mine.request_id, HISTORY, `ARRAY['delivered','abandoned']`);
    await history(other.id, theirs.request_id, HISTORY / 2, `ARRAY['delivered','abandoned','skipped']`);
    await sql(`ANALYZE webhook_events`);
    // The outage: a backlog the statistics have not seen (retries due in an hour: nothing here sends them).
    await history(partner.id, mine.request_id, BACKLOG, `ARRAY['pending']`);
    await history(other.id, theirs.request_id, BACKLOG / 4, `ARRAY['pending']`);
    const events = new WebhookEventsRepository(
      explaining.ds, explaining.ds.getRepository(WebhookEventEntity), explaining.ds.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
    );
    const [{ n: partners }] = await sql<{ n: number }>(`SELECT count(DISTINCT partner_id)::int AS n FROM webhook_events`);
    // The list's states: the one asked, or all but skipped (recorded while webhooks were off).
    const listed = `($1::text IS NULL AND state <> 'skipped' OR state = $1)`;
    // What each partner's and state's ordered read must take: its newest offset + limit (the index holds the
    // list's order, id included, so nothing past them is read).
    const reads = async (state: string | undefined, upTo: number) => (await sql<{ n: number }>(
      `SELECT COALESCE(sum(least(n, $2)), 0)::int AS n
         FROM (SELECT count(*) AS n FROM webhook_events WHERE ${listed} GROUP BY partner_id, state) branches`,
      [state ?? null, upTo]))[0].n;
    // Past the merge's budget (a deep page: 5 states × 4,050 rows a partner), the outbox is read sorted.
    const deep = await events.list({ states: LISTED_STATES, limit: 50, offset: 4000 });
    const deepExpected = await sql<{ id: string }>(`SELECT id FROM webhook_events WHERE state <> 'skipped' ORDER BY recorded_at DESC, id DESC LIMIT 50 OFFSET 4000`);
    expect(deep.map((e) => e.id)).toEqual(deepExpected.map((e) => e.id));
    expect(deep).toHaveLength(50);
    for (const [state, limit, offset] of [[undefined, 20, 0], [undefined, 25, 40], ['pending', 20, 0], ['pending', 10, 30], ['abandoned', 15, 15]] as const) {
      const expected = await sql<{ id: string }>(
        `SELECT id FROM webhook_events WHERE ${listed} ORDER BY recorded_at DESC, id DESC LIMIT $2 OFFSET $3`,
        [state ?? null, limit, offset]);
      let page: WebhookEventEntity[] = [];
      const scans = await explaining.scansOf('webhook_events', async () => {
        page = await events.list({ states: state ? [state] : LISTED_STATES, limit, offset });
      }, { analyze: true });
      expect(page.map((e) => e.id)).toEqual(expected.map((e) => e.id));
      // The walk (a probe per partner), then each partner's and state's ordered read, nothing else.
      const [walk, merge] = [0, 1].map((i) => ({ state, offset, indexes: scans.indexes[i], rows: scans.rowsReadEach[i] }));
      expect(walk.indexes.concat(merge.indexes).every((i) => i === 'webhook_events_partner' || i === 'webhook_events_open')).toBe(true);
      expect(walk.rows).toBeLessThanOrEqual(2 * partners + 2);
      expect(merge.rows).toBeLessThanOrEqual(await reads(state, offset + limit));
    }
  } finally {
    await sql(`DELETE FROM webhook_events WHERE partner_id = $1 AND NOT EXISTS (SELECT 1 FROM webhook_attempts a WHERE a.event_id = webhook_events.id)`, [other.id]);
    await sql(`UPDATE payment_requests SET amount_locked = false WHERE partner_id = $1`, [other.id]);
  }
});

it('the metrics scrape counts the webhook backlog through its index, not the history of deliveries', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4329 });
  // A history of finished deliveries and a small backlog (retries due in an hour: no worker here sends them).
  await sql(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state, attempts, next_attempt_at)
     SELECT $1, $2, 'payment.proof_verified', true, true, CASE WHEN g <= 5 THEN 'pending' ELSE 'delivered' END, 1,
            CASE WHEN g <= 5 THEN now() + interval '1 hour' END
       FROM generate_series(1, $3) g`,
    [partner.id, seed.request_id, HISTORY],
  );
  await sql(`ANALYZE webhook_events`);
  const events = new WebhookEventsRepository(
    explaining.ds, explaining.ds.getRepository(WebhookEventEntity), explaining.ds.getRepository(WebhookAttemptEntity), svc.app.get(RequestFactsPort),
  );
  let counts: Awaited<ReturnType<WebhookEventsRepository['openDeliveries']>> = [];
  const reads = await explaining.scansOf('webhook_events', async () => {
    counts = await events.openDeliveries(1000);
  }, { analyze: true });
  const [open] = await sql<{ pending: number; delivering: number }>(
    `SELECT (count(*) FILTER (WHERE state = 'pending'))::int AS pending, (count(*) FILTER (WHERE state = 'delivering'))::int AS delivering
       FROM webhook_events WHERE deliver`);
  expect(counts).toEqual([{ state: 'pending', n: open.pending }, { state: 'delivering', n: open.delivering }]);
  expect(reads.indexes.flat()).toEqual(['webhook_events_open']);
  // The open events, not the history.
  const [all] = await sql<{ n: number; open: number }>(
    `SELECT count(*)::int AS n, (count(*) FILTER (WHERE state IN ('pending','delivering')))::int AS open FROM webhook_events`);
  expect(reads.rowsRead).toBeLessThanOrEqual(all.open);
  expect(all.open).toBeLessThan(all.n / 2);
});

it('a sweep batch takes the longest lapsed first, whichever its proof state', async () => {
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 4328 });
  const attached = await cloneRequests(seed.request_id, 2,
    `amount_locked = false, proof_status = 'attached', tx_hash = '0x' || repeat('ab', 32), expires_at = now() - interval '21 years', claim_until = now() - interval '20 years'`);
  const none = await cloneRequests(seed.request_id, 2, `amount_locked = false, expires_at = now() - interval '15 years'`);
  const requests = new RequestsRepository(explaining.ds.getRepository(PaymentRequestEntity));
  const first = await explaining.ds.transaction((em) => requests.expireLapsed(em, 2));
  expect(first.map((r) => r.id).sort()).toEqual([...attached].sort());
  const second = await explaining.ds.transaction((em) => requests.expireLapsed(em, 2));
  expect(second.map((r) => r.id).sort()).toEqual([...none].sort());
});
