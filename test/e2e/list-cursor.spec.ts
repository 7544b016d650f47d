import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { COPY_REQUEST_SQL, mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Spec §4.3: paging by a moving `since` cursor "stays correct under concurrent creation". A create that waits
 * before it commits (here on its merchant's "holds" lock, which a merchant change in flight holds) must not
 * commit behind a cursor a poller has already moved past it (a helper's hunt: it was never listed). Such a
 * page stops below the oldest transaction writing payment_requests, and created_at is taken once the insert
 * holds its lock.
 */
let svc: TestService;
let p: TestPartner;
let a: { id: string };
let b: { id: string };
beforeAll(async () => {
  svc = await startService({ env: { RATE_LIMIT_SCALE: '100' } });
  p = await createPartner(svc);
  a = await createOnboardedMerchant(svc, p.testKey);
  b = await createOnboardedMerchant(svc, p.testKey);
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const list = (since: string, skip = 0, limit = 100) =>
  call(svc.publicUrl, 'GET', `/api/v1/requests?limit=${limit}&offset=${skip}&since=${encodeURIComponent(since)}`, { key: p.testKey });

/**
 * The README's loop: every item from `since` on, and the cursor it ends at. The items of the cursor's own
 * millisecond already read are skipped by offset, so a page filled by one millisecond moves on.
 */
async function readFrom(since: string, seen: string[], limit = 100): Promise<string> {
  let skip = 0;
  for (let pages = 0; ; pages++) {
    expect(pages).toBeLessThan(1000);
    const page = await list(since, skip, limit);
    expect(page.status).toBe(200);
    const items: Array<{ request_id: string; created_at: string }> = page.body.requests;
    for (const r of items) {
      expect(seen).not.toContain(r.request_id);
      seen.push(r.request_id);
    }
    if (!page.body.has_more) return since;
    const last = items[items.length - 1].created_at;
    const same = items.filter((r) => r.created_at === last).length;
    if (last === since) skip += same;
    else [since, skip] = [last, same];
  }
}

const waitingOnLocks = () => sql<{ n: number }>(
  `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);

it('a create that waited behind its merchant\'s change is listed after it commits, not skipped by the cursor', async () => {
  const seen: string[] = [];
  let cursor = await readFrom('1970-01-01T00:00:00.000Z', seen);

  // A merchant change in flight for A (MerchantDirectory.change holds this lock until its transaction ends).
  const change = new Client({ connectionString: testEnv().databaseUrl });
  await change.connect();
    try {
    await change.query('BEGIN');
    await change.query(`SELECT pg_advisory_xact_lock(hashtext('merchants.holds'), hashtext($1::text))`, [a.id]);
    const late = call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: a.id, fiat_amount_int: 4242 } });
    await waitFor(async () => (await waitingOnLocks())[0].n >= 1);
    const other = await mustCreateRequest(svc, p.testKey, { account_id: b.id, fiat_amount_int: 4343 });
    // The poller meanwhile: B's request is committed, but stays below the horizon while A's insert is open.
    cursor = await readFrom(cursor, seen);
    expect(seen).not.toContain(other.request_id);
    await change.query('COMMIT');
    const created = await late;
    expect(created.status).toBe(201);
    // Stamped when its insert went through, after B's.
    expect(Date.parse(created.body.created_at)).toBeGreaterThanOrEqual(Date.parse(other.created_at));
    await readFrom(cursor, seen);
    expect(seen.slice(-2)).toEqual([other.request_id, created.body.request_id]);
  } finally {
    await change.end();
  }
}, 60_000);

it('a request inserted late in its transaction is stamped at its insert, not at the transaction\'s start', async () => {
  const model = await mustCreateRequest(svc, p.testKey, { account_id: a.id, fiat_amount_int: 4545 });
  const tx = new Client({ connectionString: testEnv().databaseUrl });
  await tx.connect();
  try {
    await tx.query('BEGIN');
    const [{ started }] = (await tx.query<{ started: Date }>(`SELECT now() AS started`)).rows;
    // Some time passes in the transaction before its insert (a plan's lock, a racing create's amount).
    await waitFor(async () => (Date.now() - started.getTime() > 50 ? true : null));
    const id = randomUUID();
    const [row] = (await tx.query<{ created_at: Date }>(COPY_REQUEST_SQL, [id, `late-${id}`, 1000, model.request_id])).rows;
    await tx.query('ROLLBACK');
    expect(row.created_at.getTime() - started.getTime()).toBeGreaterThanOrEqual(50);
  } finally {
    await tx.end();
  }
});

it('pages through more rows of one millisecond than a page holds, each once (the loop used to read the same page for ever)', async () => {
  const model = await mustCreateRequest(svc, p.testKey, { account_id: b.id, fiat_amount_int: 4646 });
  const ids = [model.request_id];
  for (let i = 1; i < 7; i++) {
    const id = randomUUID();
    await sql(COPY_REQUEST_SQL, [id, `ms-${id}`, i, model.request_id]);
    ids.push(id);
  }
  const [{ at }] = await sql<{ at: string }>(
    `UPDATE payment_requests SET created_at = date_trunc('milliseconds', now()) - interval '1 second' WHERE id = ANY($1::uuid[]) RETURNING created_at AS at`,
    [ids],
  );
  const before = new Date(new Date(at).getTime() - 1).toISOString();
  const seen: string[] = [];
  await readFrom(before, seen, 2);
  expect(ids.filter((id) => seen.includes(id)).sort()).toEqual([...ids].sort());
});
