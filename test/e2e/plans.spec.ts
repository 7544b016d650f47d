import { Wallet } from 'ethers';
import { Client } from 'pg';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { dueAt } from '../../src/modules/plans/domain/schedule';
import { call } from '../support/http';
import { Receiver } from '../support/receiver';
import { DASHBOARD_ITEM_FIELDS as ITEM_FIELDS, ISO_MS_RE, keysOf, REQUEST_FIELDS, UUID_RE } from '../support/shapes';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * DESIGN §5 "Recurring plans" and §8 "Plans": every endpoint and error of the dashboard's plans API and the
 * payer's plan API, and a plan's charge seen through the partner API and its webhook with exactly the plan's
 * metadata, paid on the local chain.
 */
let svc: TestService;
let receiver: Receiver;
let pa: TestPartner;
let a: DashboardClient; // partner A's test-mode merchant
let aWallet: Wallet;
let other: DashboardClient; // another merchant of partner A
let live: DashboardClient; // a live-mode merchant
const env = testEnv();

const PLAN_FIELDS = [
  'ok', 'plan_id', 'status', 'pause_reason', 'title', 'fiat_amount', 'fiat_currency', 'interval', 'interval_count', 'start_at',
  'next_charge_at', 'charges_created', 'max_charges', 'expiry_minutes', 'payer_name', 'payer_email', 'metadata', 'plan_url', 'created_at',
].sort();
beforeAll(async () => {
  svc = await startService({ worker: true, env: { EXPIRY_SWEEP_INTERVAL_MS: '500', CHAIN_SCAN_INTERVAL_MS: '500', HEAD_POLL_MS: '100', VERIFY_POLL_MS: '200' } });
  receiver = await Receiver.start();
  pa = await createPartner(svc);
  const put = await admin(svc, 'PUT', `/partners/${pa.id}/webhook`, { url: receiver.url, enabled: true });
  if (put.status !== 200) throw new Error(put.text);
  const m = await createOnboardedMerchant(svc, pa.testKey);
  aWallet = m.wallet;
  a = await signInDashboard(svc, m.wallet);
  other = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
  live = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.liveKey)).wallet);
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
  await closeSql();
});

const newPlan = (c: DashboardClient, body: Record<string, unknown>) => c.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 2500, interval: 'month', ...body } });
async function mustPlan(c: DashboardClient, body: Record<string, unknown> = {}) {
  const r = await newPlan(c, body);
  if (r.status !== 201) throw new Error(`plan create failed: ${r.status} ${r.text}`);
  return r.body;
}
const tokenOf = (planUrl: string) => planUrl.split('/').pop()!;

describe('POST /dashboard/api/plans', () => {
  it('creates a plan starting now: 201, the plan object, period 0 charged at once, next charge one interval later', async () => {
    const before = Date.now();
    const r = await newPlan(a, { payer_name: 'Ada', payer_email: 'ada@example.com', metadata: { customer: 'c-42', id: '7' } });
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(PLAN_FIELDS);
    expect(r.body).toMatchObject({
      ok: true, plan_id: expect.stringMatching(UUID_RE), status: 'active', pause_reason: null, title: 'Gym', fiat_amount: 2500,
      fiat_currency: 'usd', interval: 'month', interval_count: 1, charges_created: 1, max_charges: null, expiry_minutes: 10080,
      payer_name: 'Ada', payer_email: 'ada@example.com', metadata: { customer: 'c-42', id: '7' },
    });
    // Its keys in the order sent, on the plan and on its charges (a plan's metadata was jsonb: shortest key first).
    expect(Object.keys(r.body.metadata)).toEqual(['customer', 'id']);
    expect(r.body.plan_url).toMatch(new RegExp(`^${svc.config.publicUrl}/plan/[A-Za-z0-9_-]{43}$`));
    expect(r.body.start_at).toMatch(ISO_MS_RE);
    expect(Date.parse(r.body.start_at)).toBeGreaterThanOrEqual(before - 5);
    const start = new Date(r.body.start_at);
    const next = new Date(start);
    next.setUTCMonth(start.getUTCMonth() + 1);
    if (next.getUTCDate() !== start.getUTCDate()) next.setUTCDate(0); // clamped to the month's end
    expect(r.body.next_charge_at).toBe(next.toISOString());
    const [charge] = await sql(`SELECT source, plan_id, period_index, metadata, payment_mode, customer_name, customer_email,
      expires_at - created_at AS ttl FROM payment_requests WHERE plan_id = $1`, [r.body.plan_id]);
    expect(charge).toMatchObject({ source: 'plan', period_index: 0, metadata: { customer: 'c-42', id: '7' }, payment_mode: 'service', customer_name: 'Ada', customer_email: 'ada@example.com' });
    expect(Object.keys(charge.metadata)).toEqual(['customer', 'id']);
    expect(charge.ttl).toEqual({ days: 7 });
  });

  it('defaults: metadata {}, payment_mode pos without a payer name; a future start_at charges nothing yet', async () => {
    const start = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const p = await mustPlan(a, { start_at: start, interval: 'week', interval_count: 2, max_charges: 3, expiry_minutes: 60 });
    expect(p).toMatchObject({ metadata: {}, charges_created: 0, next_charge_at: start, start_at: start, interval_count: 2, max_charges: 3, expiry_minutes: 60, payer_name: null });
    expect(await sql(`SELECT 1 FROM payment_requests WHERE plan_id = $1`, [p.plan_id])).toHaveLength(0);
  });

  it('optional fields sent as null read as absent: start_at null starts now (not 1970), the other defaults hold', async () => {
    // Before: start_at null became new Date(null), 1970-01-01, and the schedule ran from there.
    const before = Date.now();
    const p = await mustPlan(a, {
      interval: 'day', interval_count: null, start_at: null, fiat_currency_code: null, max_charges: null, expiry_minutes: null, payer_name: null, payer_email: null, metadata: null,
    });
    expect(Date.parse(p.start_at)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(p.next_charge_at) - Date.parse(p.start_at)).toBe(86_400_000);
    expect(p).toMatchObject({ interval_count: 1, max_charges: null, expiry_minutes: 10080, payer_name: null, payer_email: null, metadata: {}, charges_created: 1 });
  });

  it('a past start_at charges only the latest due period at once; next_charge_at is the one after', async () => {
    const start = new Date(Date.now() - 3 * 7 * 86_400_000 - 3_600_000); // 3 weeks and an hour ago
    const p = await mustPlan(a, { start_at: start.toISOString(), interval: 'week' });
    expect(p.charges_created).toBe(1);
    expect(p.next_charge_at).toBe(new Date(start.getTime() + 4 * 7 * 86_400_000).toISOString());
    const rows = await sql(`SELECT period_index FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    expect(rows.map((x) => x.period_index)).toEqual([3]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a missing title', { title: undefined }, 'title'],
    ['a title over 120 characters', { title: 'x'.repeat(121) }, 'title'],
    ['a title over 120 characters as Postgres counts them (variation selectors too; it was a 500)', { title: 'a\uFE0F'.repeat(61) }, 'title'],
    ['an unknown interval', { interval: 'fortnight' }, 'interval'],
    ['interval_count 13', { interval_count: 13 }, 'interval_count'],
    ['interval_count 0', { interval_count: 0 }, 'interval_count'],
    ['a zero amount', { fiat_amount_int: 0 }, 'fiat_amount_int'],
    ['max_charges 0', { max_charges: 0 }, 'max_charges'],
    ['a malformed start_at', { start_at: 'tomorrow' }, 'start_at'],
    ['a week date as start_at', { start_at: '2026-W48' }, 'start_at'],
    ['an ordinal date as start_at', { start_at: '2026-330' }, 'start_at'],
    ['a start_at in year 9999 (next_charge_at would leave four-digit years)', { start_at: '9999-12-31T00:00:00Z' }, 'start_at'],
    ['a start_at more than 10 years ahead', { start_at: new Date(Date.now() + 3700 * 86_400_000).toISOString() }, 'start_at'],
    ['a payer_name over 200 characters', { payer_name: 'x'.repeat(201) }, 'payer_name'],
    ['a payer_email over 254 characters', { payer_email: `${'x'.repeat(250)}@a.io` }, 'payer_email'],
    ['metadata with a number', { metadata: { n: 1 } }, 'metadata'],
    ['metadata with 21 keys', { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
    ['an unknown field', { colour: 'red' }, 'colour'],
  ])('400 invalid_request for %s, and nothing is created', async (_, body, field) => {
    const before = await sql(`SELECT count(*)::int AS n FROM plans`);
    const r = await newPlan(a, body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_request' });
    expect(JSON.stringify(r.body.errors)).toContain(field);
    expect(await sql(`SELECT count(*)::int AS n FROM plans`)).toEqual(before);
  });

  it('400 invalid_expiry_minutes with allowed_expiry_minutes (the partner\'s values and 10080)', async () => {
    const r = await newPlan(a, { expiry_minutes: 61 });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_expiry_minutes');
    expect(r.body.allowed_expiry_minutes).toContain(10080);
    expect(r.body.allowed_expiry_minutes).toContain(60);
  });

  it('401 without the session cookie, 403 csrf_failed without the CSRF header; nothing is created', async () => {
    const before = await sql(`SELECT count(*)::int AS n FROM plans`);
    const anon = await call(svc.publicUrl, 'POST', '/dashboard/api/plans', { body: { title: 'x', fiat_amount_int: 1, interval: 'day' } });
    expect(anon.status).toBe(401);
    expect(anon.body.error).toBe('unauthorized');
    const noCsrf = await a.call('POST', '/plans', { body: { title: 'x', fiat_amount_int: 1, interval: 'day' }, csrf: false });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error).toBe('csrf_failed');
    expect((await call(svc.publicUrl, 'GET', '/dashboard/api/plans')).status).toBe(401);
    expect(await sql(`SELECT count(*)::int AS n FROM plans`)).toEqual(before);
  });

  it('400 merchant_disabled for a disabled merchant', async () => {
    const m = await createOnboardedMerchant(svc, pa.testKey);
    const c = await signInDashboard(svc, m.wallet);
    expect((await admin(svc, 'POST', `/merchants/${m.id}/disable`)).status).toBe(200);
    const r = await newPlan(c, {});
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('merchant_disabled');
  });
});

describe('reading plans', () => {
  it('lists the merchant\'s plans oldest first, with status, limit and offset; 400 for bad values', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const p1 = await mustPlan(c, { title: 'one' });
    const p2 = await mustPlan(c, { title: 'two' });
    await c.call('POST', `/plans/${p1.plan_id}/pause`);
    const all = await c.call('GET', '/plans');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    expect(all.body.plans.map((p: any) => p.plan_id)).toEqual([p1.plan_id, p2.plan_id]);
    expect(keysOf({ ok: true, ...all.body.plans[0] })).toEqual(PLAN_FIELDS);
    expect((await c.call('GET', '/plans?status=paused')).body.plans.map((p: any) => p.plan_id)).toEqual([p1.plan_id]);
    const page = await c.call('GET', '/plans?limit=1&offset=1');
    expect(page.body).toMatchObject({ has_more: false, limit: 1, offset: 1 });
    expect(page.body.plans.map((p: any) => p.plan_id)).toEqual([p2.plan_id]);
    expect((await c.call('GET', '/plans?limit=1')).body.has_more).toBe(true);
    for (const q of ['status=gone', 'limit=101', 'offset=-1', 'limit=x']) {
      const bad = await c.call('GET', `/plans?${q}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
  });

  it('gets one plan with its charges as dashboard items, oldest first', async () => {
    const p = await mustPlan(a, { metadata: { order: 'o-1' } });
    await a.call('POST', `/plans/${p.plan_id}/advance`);
    const r = await a.call('GET', `/plans/${p.plan_id}`);
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual([...PLAN_FIELDS, 'charges'].sort());
    expect(r.body.charges).toHaveLength(2);
    expect(keysOf(r.body.charges[0])).toEqual(ITEM_FIELDS);
    expect(r.body.charges.map((c: any) => [c.period_index, c.source, c.plan_id, c.memo])).toEqual([
      [0, 'plan', p.plan_id, 'Gym'],
      [1, 'plan', p.plan_id, 'Gym'],
    ]);
    expect(r.body.charges[0]).toMatchObject({ status: 'expired', metadata: { order: 'o-1' } });
    expect(r.body.charges[1]).toMatchObject({ status: 'requested', metadata: { order: 'o-1' } });
  });

  it('another merchant\'s plan is 404 not_found for every call; a malformed id too', async () => {
    const p = await mustPlan(a, {});
    for (const [method, path] of [['GET', ''], ['POST', '/pause'], ['POST', '/resume'], ['POST', '/cancel'], ['POST', '/advance']]) {
      const r = await other.call(method, `/plans/${p.plan_id}${path}`);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }
    expect((await a.call('GET', '/plans/not-a-uuid')).status).toBe(404);
    expect((await a.call('GET', `/plans/${p.plan_id}`)).body.status).toBe('active');
  });
});

describe('pause, resume, cancel', () => {
  it('pause → paused (merchant, no next charge); resume → active at the first date from now on; cancel is final', async () => {
    const start = new Date(Date.now() - 2 * 86_400_000 - 60_000); // two days and a minute ago, daily
    const p = await mustPlan(a, { start_at: start.toISOString(), interval: 'day' });
    const paused = await a.call('POST', `/plans/${p.plan_id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ ok: true, status: 'paused', pause_reason: 'merchant', next_charge_at: null });
    expect((await a.call('POST', `/plans/${p.plan_id}/pause`)).body.status).toBe('paused');
    const resumed = await a.call('POST', `/plans/${p.plan_id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active', pause_reason: null, next_charge_at: new Date(start.getTime() + 3 * 86_400_000).toISOString() });
    const canceled = await a.call('POST', `/plans/${p.plan_id}/cancel`);
    expect(canceled.body).toMatchObject({ status: 'canceled', pause_reason: null, next_charge_at: null });
    for (const action of ['resume', 'pause', 'advance']) {
      const r = await a.call('POST', `/plans/${p.plan_id}/${action}`);
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('plan_not_active');
    }
    // The open charge stays payable.
    const [charge] = await sql(`SELECT status FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    expect(charge.status).toBe('requested');
  });

  it('changes need the CSRF header', async () => {
    const p = await mustPlan(a, {});
    const r = await a.call('POST', `/plans/${p.plan_id}/cancel`, { csrf: 'wrong' });
    expect(r.status).toBe(403);
    expect((await a.call('GET', `/plans/${p.plan_id}`)).body.status).toBe('active');
  });
});

describe('POST /dashboard/api/plans/:id/advance (test clock)', () => {
  it('expires the unpaid open charge now (missed), then creates the next period\'s charge now', async () => {
    const p = await mustPlan(a, {});
    const [c0] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    const before = Date.now();
    const r = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, status: 'active', charges_created: 2 });
    const rows = await sql(`SELECT id, period_index, status, expires_at, expired_at FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [p.plan_id]);
    expect(rows.map((x) => [x.period_index, x.status])).toEqual([[0, 'expired'], [1, 'requested']]);
    expect(rows[0].id).toBe(c0.id);
    expect(rows[0].expires_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(rows[0].expires_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    const [plan] = await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [p.plan_id]);
    expect(plan.missed_in_row).toBe(1);
  });

  it('twenty-five advances of one plan at once all answer: each waits on the plan\'s lock holding only its own connection', async () => {
    // A merchant of its own: the dashboard allows 60 changes a minute per merchant.
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const p = await mustPlan(c, { max_charges: 100 });
    // Before, a charge read its partner and the plan's charges on a second pool connection: the advances
    // queued on the lock held all twenty of the service's connections, and the holder waited for ever.
    const answers = await Promise.all(Array.from({ length: 25 }, () => c.call('POST', `/plans/${p.plan_id}/advance`)));
    const statuses = answers.map((r) => r.status);
    // Two misses pause the plan: the first two advances answer 200, the rest 409 plan_not_active.
    expect(statuses.filter((x) => x === 200)).toHaveLength(2);
    expect(statuses.filter((x) => x === 409)).toHaveLength(23);
  }, 60_000);

  it('two missed charges in a row pause the plan (unpaid); then advance is 409 plan_not_active', async () => {
    const p = await mustPlan(a, {});
    expect((await a.call('POST', `/plans/${p.plan_id}/advance`)).body.status).toBe('active');
    const second = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(second.body).toMatchObject({ status: 'paused', pause_reason: 'unpaid', next_charge_at: null, charges_created: 2 });
    const r = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('plan_not_active');
    // Resume starts the count again.
    expect((await a.call('POST', `/plans/${p.plan_id}/resume`)).body.status).toBe('active');
    expect((await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [p.plan_id]))[0].missed_in_row).toBe(0);
  });

  it('on a plan with no charge yet it creates period 0; max_charges reached → completed at once', async () => {
    const p = await mustPlan(a, { start_at: new Date(Date.now() + 86_400_000).toISOString(), max_charges: 2 });
    const first = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(first.body).toMatchObject({ status: 'active', charges_created: 1 });
    const second = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(second.body).toMatchObject({ status: 'completed', charges_created: 2, next_charge_at: null });
    const rows = await sql(`SELECT period_index, status FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [p.plan_id]);
    expect(rows.map((x) => x.period_index)).toEqual([0, 1]);
    expect(rows[1].status).toBe('requested'); // the last charge stays payable
    expect((await a.call('POST', `/plans/${p.plan_id}/advance`)).body.error).toBe('plan_not_active');
  });

  it('racing the expiry job of its open charge (which locks the charge, then the plan), the advance still answers 200: one miss, one new charge', async () => {
    const p = await mustPlan(a, {});
    const [c0] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    // An expiry job's transaction (a sweep batch), held open between its two statements: the charge
    // is expired and row-locked; counting the miss on the plan comes next.
    const job = new Client({ connectionString: env.databaseUrl });
    await job.connect();
    try {
      const [{ pid }] = (await job.query(`SELECT pg_backend_pid() AS pid`)).rows;
      await job.query('BEGIN');
      await job.query(`UPDATE payment_requests SET status = 'expired', expired_at = now(), updated_at = now() WHERE id = $1`, [c0.id]);
      // The advance locks the plan, finds the charge open and waits for the job's lock on it.
      const advanced = a.call('POST', `/plans/${p.plan_id}/advance`);
      await waitFor(async () => (await sql(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE 'UPDATE payment_requests%' AND pid <> $1`, [pid],
      )).length > 0, 10000);
      // A deadlock: Postgres ends whichever side's check finds the cycle first. Usually the advance (it waited
      // first, and retries); but its one check can run before this statement waits, when this side is the
      // one ended (seen in a loaded run) and the advance expires the charge itself. Either way: one miss.
      const counted = await job.query(`UPDATE plans SET missed_in_row = missed_in_row + 1, updated_at = now() WHERE id = $1`, [p.plan_id]).then(
        () => true,
        (e: { code?: string }) => {
          if (e.code !== '40P01') throw e;
          return false;
        },
      );
      await job.query(counted ? 'COMMIT' : 'ROLLBACK');
      const r = await advanced;
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'active', charges_created: 2 });
    } finally {
      await job.end();
    }
    const rows = await sql(`SELECT period_index, status FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [p.plan_id]);
    expect(rows.map((x) => [x.period_index, x.status])).toEqual([[0, 'expired'], [1, 'requested']]);
    expect((await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [p.plan_id]))[0].missed_in_row).toBe(1);
  });

  it('400 test_mode_only for a live-mode merchant\'s plan', async () => {
    const p = await mustPlan(live, { start_at: new Date(Date.now() + 86_400_000).toISOString() });
    const r = await live.call('POST', `/plans/${p.plan_id}/advance`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('test_mode_only');
    expect(await sql(`SELECT 1 FROM payment_requests WHERE plan_id = $1`, [p.plan_id])).toHaveLength(0);
  });
});

describe('GET /plan/api/:token (the payer\'s page)', () => {
  it('shows the plan, its open charge and its charges; no metadata or payer details', async () => {
    const p = await mustPlan(a, { title: 'Piano lessons', interval: 'week', interval_count: 2, payer_email: 'p@example.com', metadata: { secret: 's' } });
    const r = await call(svc.publicUrl, 'GET', `/plan/api/${tokenOf(p.plan_url)}`);
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(['charges', 'fiat_amount', 'fiat_currency', 'interval', 'interval_count', 'next_charge_at', 'ok', 'open_charge', 'status', 'title']);
    const [c0] = await sql(`SELECT id, expires_at FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    expect(r.body).toMatchObject({
      ok: true, title: 'Piano lessons', fiat_amount: 2500, fiat_currency: 'usd', interval: 'week', interval_count: 2, status: 'active',
      next_charge_at: p.next_charge_at,
      open_charge: { request_id: c0.id, pay_page_url: `${svc.config.payUrl}/${c0.id}`, expires_at: c0.expires_at.toISOString() },
    });
    expect(r.body.charges).toEqual([{ request_id: c0.id, period_index: 0, status: 'requested', proof_status: 'none', created_at: expect.stringMatching(ISO_MS_RE) }]);
    await a.call('POST', `/plans/${p.plan_id}/cancel`);
    const after = await call(svc.publicUrl, 'GET', `/plan/api/${tokenOf(p.plan_url)}`);
    expect(after.body).toMatchObject({ status: 'canceled', next_charge_at: null, open_charge: { request_id: c0.id } });
  });

  it('an unknown or malformed token is 404 not_found; the admin listener does not serve it', async () => {
    const p = await mustPlan(a, {});
    expect((await call(svc.publicUrl, 'GET', `/plan/api/${'A'.repeat(43)}`)).body).toEqual({ ok: false, error: 'not_found' });
    expect((await call(svc.publicUrl, 'GET', '/plan/api/short')).status).toBe(404);
    expect((await call(svc.adminUrl, 'GET', `/plan/api/${tokenOf(p.plan_url)}`)).status).toBe(404);
  });
});

describe('a plan\'s charge through the partner API and webhooks', () => {
  it('is listed and fetched like any request with exactly the plan\'s metadata; paid, its proof_verified webhook carries it and resets the missed count', async () => {
    const metadata = { customer_id: 'cus_981', note: 'ünïcode & <tags>' };
    const p = await mustPlan(a, { metadata, title: 'Box' });
    await a.call('POST', `/plans/${p.plan_id}/advance`); // period 0 missed, period 1 open
    expect((await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [p.plan_id]))[0].missed_in_row).toBe(1);
    const [charge] = await sql(`SELECT id, amount FROM payment_requests WHERE plan_id = $1 AND period_index = 1`, [p.plan_id]);

    const got = await call(svc.publicUrl, 'GET', `/api/v1/requests/${charge.id}`, { key: pa.testKey });
    expect(got.status).toBe(200);
    expect(keysOf(got.body)).toEqual(REQUEST_FIELDS);
    expect(got.body).toMatchObject({ request_id: charge.id, account_id: a.merchantId, fiat_amount: 2500, metadata });
    const listed = await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${a.merchantId}&limit=100`, { key: pa.testKey });
    expect(listed.body.requests.find((r: any) => r.request_id === charge.id)).toMatchObject({ metadata });

    const payer = DEV_KEYS[1];
    await mint(env.rpcUrl, env.token, new Wallet(payer).address, BigInt(charge.amount));
    const tx = await transferToken(env.rpcUrl, env.token, payer, aWallet.address, BigInt(charge.amount));
    const proof = await call(svc.publicUrl, 'POST', `/pay/api/${charge.id}/proof`, { body: { tx_hash: tx.txHash } });
    expect(proof.status).toBe(200);
    const calls = await receiver.waitUntil(
      (cs) => cs.some((c) => c.json().request_id === charge.id && c.json().event === 'payment.proof_verified'),
      30_000,
    );
    const hook = calls.find((c) => c.json().request_id === charge.id && c.json().event === 'payment.proof_verified')!.json();
    expect(hook.metadata).toEqual(metadata);
    await waitFor(async () => (await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [p.plan_id]))[0].missed_in_row === 0);
    const view = await call(svc.publicUrl, 'GET', `/plan/api/${tokenOf(p.plan_url)}`);
    expect(view.body.open_charge).toBeNull();
    expect(view.body.charges.map((c: any) => [c.period_index, c.status, c.proof_status])).toEqual([[0, 'expired', 'none'], [1, 'requested', 'verified']]);
  });
});


describe('a charge paid late, within its grace window, after it counted as missed', () => {
  const planRow = async (id: string) => (await sql(`SELECT status, pause_reason, next_charge_at, charges_created, missed_in_row FROM plans WHERE id = $1`, [id]))[0];
  const chargeOf = async (planId: string, k: number) => (await sql(`SELECT id, amount, status FROM payment_requests WHERE plan_id = $1 AND period_index = $2`, [planId, k]))[0];
  /** Pays the charge on the local chain (it expired already; its claim window is still open) and waits until it is verified. */
  async function payLate(charge: { id: string; amount: string }): Promise<void> {
    const payer = DEV_KEYS[3];
    await mint(env.rpcUrl, env.token, new Wallet(payer).address, BigInt(charge.amount));
    const tx = await transferToken(env.rpcUrl, env.token, payer, aWallet.address, BigInt(charge.amount));
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${charge.id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
    await waitFor(async () => (await sql(`SELECT proof_status FROM payment_requests WHERE id = $1`, [charge.id]))[0].proof_status === 'verified', 30_000, 100);
  }
  /** A plan whose two charges were missed (the test clock), so it is paused for unpaid. */
  async function pausedUnpaid() {
    const p = await mustPlan(a, {});
    await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect((await a.call('POST', `/plans/${p.plan_id}/advance`)).body).toMatchObject({ status: 'paused', pause_reason: 'unpaid' });
    return p;
  }

  it('the latest charge, which paused the plan, resumes it as resume would: next charge at the first date from now on, nothing backfilled', async () => {
    const p = await pausedUnpaid();
    const c1 = await chargeOf(p.plan_id, 1);
    expect(c1.status).toBe('expired');
    await payLate(c1);
    await waitFor(async () => (await planRow(p.plan_id)).status === 'active', 15_000, 100);
    // Period 2 (start + 2 months): period 1 was already charged, and resume never goes back.
    const next = dueAt({ startAt: new Date(p.start_at), interval: 'month', intervalCount: 1 }, 2);
    expect(await planRow(p.plan_id)).toEqual({ status: 'active', pause_reason: null, next_charge_at: next, charges_created: 2, missed_in_row: 0 });
    expect((await a.call('GET', `/plans/${p.plan_id}`)).body).toMatchObject({ status: 'active', next_charge_at: next.toISOString(), charges_created: 2 });
    const rows = await sql(`SELECT period_index FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [p.plan_id]);
    expect(rows.map((x) => x.period_index)).toEqual([0, 1]);
  });

  it('an older missed charge paid late counts the misses after it: one, too few to pause, so the plan resumes', async () => {
    const p = await pausedUnpaid();
    await payLate(await chargeOf(p.plan_id, 0));
    await waitFor(async () => (await planRow(p.plan_id)).status === 'active', 15_000, 100);
    const next = dueAt({ startAt: new Date(p.start_at), interval: 'month', intervalCount: 1 }, 2);
    expect(await planRow(p.plan_id)).toEqual({ status: 'active', pause_reason: null, next_charge_at: next, charges_created: 2, missed_in_row: 1 });
  });

  /** A plan whose charges 0 and 1 are both open (charges that overlap: one stays payable past the next's date), 1 then paid. */
  async function newerPaidOlderOpen() {
    const p = await mustPlan(a, {});
    await a.call('POST', `/plans/${p.plan_id}/advance`);
    const [c0, c1] = [await chargeOf(p.plan_id, 0), await chargeOf(p.plan_id, 1)];
    // The advance expired charge 0 as the test clock does; put it back open, and its miss with it.
    await sql(`UPDATE payment_requests SET status = 'requested', expired_at = NULL, expires_at = now() + interval '1 hour', claim_until = now() + interval '2 hours' WHERE id = $1`, [c0.id]);
    await sql(`UPDATE plans SET missed_in_row = 0 WHERE id = $1`, [p.plan_id]);
    await payLate(c1);
    expect(await planRow(p.plan_id)).toMatchObject({ status: 'active', missed_in_row: 0 });
    return { p, c0 };
  }

  it('an older charge lapsing after a newer one was paid is no miss: the run of payments is unbroken (the sweep)', async () => {
    const { p, c0 } = await newerPaidOlderOpen();
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, [c0.id]);
    await waitFor(async () => (await chargeOf(p.plan_id, 0)).status === 'expired', 15_000, 100);
    expect(await planRow(p.plan_id)).toMatchObject({ status: 'active', pause_reason: null, missed_in_row: 0 });
  });

  it('nor when the test clock expires it: the advance charges the next period and counts nothing', async () => {
    const { p } = await newerPaidOlderOpen();
    const r = await a.call('POST', `/plans/${p.plan_id}/advance`);
    expect(r.body).toMatchObject({ status: 'active', charges_created: 3 });
    expect((await chargeOf(p.plan_id, 0)).status).toBe('expired');
    expect(await planRow(p.plan_id)).toMatchObject({ status: 'active', missed_in_row: 0 });
  });

  it('a plan paused for unpaid that the merchant then pauses is the merchant\'s: paying its latest charge late leaves it paused', async () => {
    const p = await pausedUnpaid();
    const paused = await a.call('POST', `/plans/${p.plan_id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', pause_reason: 'merchant', next_charge_at: null });
    await payLate(await chargeOf(p.plan_id, 1));
    await waitFor(async () => (await planRow(p.plan_id)).missed_in_row === 0, 15_000, 100);
    expect(await planRow(p.plan_id)).toMatchObject({ status: 'paused', pause_reason: 'merchant', next_charge_at: null });
  });

  it('a plan paused by the merchant, or canceled, keeps its status', async () => {
    // Paused by the merchant with period 1 open; period 1 then lapses (the sweep counts the miss) and is paid in its grace window.
    const byMerchant = await mustPlan(a, {});
    await a.call('POST', `/plans/${byMerchant.plan_id}/advance`);
    expect((await a.call('POST', `/plans/${byMerchant.plan_id}/pause`)).body.pause_reason).toBe('merchant');
    const c1 = await chargeOf(byMerchant.plan_id, 1);
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second', claim_until = now() + interval '1 hour' WHERE id = $1`, [c1.id]);
    await waitFor(async () => (await planRow(byMerchant.plan_id)).missed_in_row === 2, 15_000, 100);
    await payLate(c1);
    const canceled = await pausedUnpaid();
    expect((await a.call('POST', `/plans/${canceled.plan_id}/cancel`)).body.status).toBe('canceled');
    await payLate(await chargeOf(canceled.plan_id, 1));
    await waitFor(async () => (await planRow(byMerchant.plan_id)).missed_in_row === 0 && (await planRow(canceled.plan_id)).missed_in_row === 0, 15_000, 100);
    expect(await planRow(byMerchant.plan_id)).toMatchObject({ status: 'paused', pause_reason: 'merchant', next_charge_at: null });
    expect(await planRow(canceled.plan_id)).toMatchObject({ status: 'canceled', pause_reason: null, next_charge_at: null });
  });
});
