import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { dueAt, type PlanInterval } from '../../src/modules/plans/domain/schedule';
import { dashboardClient, signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { TestClock } from '../support/clock';

/*
 * DESIGN §5 "Recurring plans", the scheduler on real Postgres and Redis: two workers sharing one Redis prefix
 * (one job scheduler, both running the runs), a worker restarted after downtime, and a clock the test moves
 * (the plans' clock provider; the database's clock still stamps the requests).
 */

const env = testEnv();
const clock = new TestClock();
const shared = {
  REDIS_PREFIX: `${env.redisPrefix}-plans-${randomBytes(3).toString('hex')}`,
  PLAN_SCHEDULER_INTERVAL_MS: '200',
  // Runs of 20 plans (200 in production): the starvation case below needs more failing plans than one run takes.
  PLAN_SCHEDULER_BATCH: '20',
  EXPIRY_SWEEP_INTERVAL_MS: '200',
  CHAIN_SCAN_INTERVAL_MS: '300',
  HEAD_POLL_MS: '100',
  VERIFY_POLL_MS: '200',
  RATE_LIMIT_SCALE: '100',
};
const startWorker = () => startService({ worker: true, env: shared, plans: { clock } });

let a: TestService;
let b: TestService;
let partner: TestPartner;
let m: { id: string; wallet: Wallet };
let dash: DashboardClient;

beforeAll(async () => {
  a = await startWorker();
  b = await startWorker();
  partner = await createPartner(a);
  m = await createOnboardedMerchant(a, partner.testKey);
  dash = await signInDashboard(a, m.wallet);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await closeSql();
});

interface PlanRow {
  status: string;
  pause_reason: string | null;
  next_period_index: number;
  next_charge_at: Date | null;
  charges_created: number;
  missed_in_row: number;
}
const planRow = async (id: string): Promise<PlanRow> => (await sql(`SELECT * FROM plans WHERE id = $1`, [id]))[0];
const periods = async (id: string): Promise<number[]> =>
  (await sql(`SELECT period_index FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [id])).map((r) => r.period_index);

/** A plan starting `startInMs` after the test clock's now (not yet due unless ≤ 0). */
async function newPlan(c: DashboardClient, interval: PlanInterval, startAt: Date, extra: Record<string, unknown> = {}) {
  const r = await c.call('POST', '/plans', { body: { title: 'Sub', fiat_amount_int: 1000 + Math.floor(Math.random() * 9000), interval, start_at: startAt.toISOString(), ...extra } });
  if (r.status !== 201) throw new Error(`${r.status} ${r.text}`);
  return { id: r.body.plan_id as string, startAt, interval };
}
const due = (p: { startAt: Date; interval: PlanInterval }, k: number) => dueAt({ startAt: p.startAt, interval: p.interval, intervalCount: 1 }, k);
/** Moves the clock just past period k's due time and waits until the scheduler has moved the plan past it. */
async function reach(p: { id: string; startAt: Date; interval: PlanInterval }, k: number, timeoutMs = 15_000): Promise<void> {
  clock.set(new Date(due(p, k).getTime() + 1));
  await waitFor(async () => {
    const row = await planRow(p.id);
    return row.status !== 'active' || row.next_period_index > k;
  }, timeoutMs, 50);
}
/** Arranges a charge's expiry time in the past; the expiry sweep stores it (and counts the miss). */
async function lapse(planId: string, k: number): Promise<void> {
  const [r] = await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second', claim_until = now() - interval '1 second'
    WHERE plan_id = $1 AND period_index = $2 RETURNING id`, [planId, k]);
  await waitFor(async () => (await sql(`SELECT status FROM payment_requests WHERE id = $1`, [r.id]))[0].status === 'expired', 15_000, 50);
}

it('two workers create exactly one charge per period for every plan, within seconds of its due time', async () => {
  const start = new Date(clock.now().getTime() + 3_600_000);
  const plans = await Promise.all(Array.from({ length: 12 }, () => newPlan(dash, 'day', start)));
  for (let k = 0; k < 4; k++) {
    const t0 = Date.now();
    clock.set(new Date(due(plans[0], k).getTime() + 1));
    await waitFor(async () => {
      const [row] = await sql(`SELECT count(*)::int AS n FROM plans WHERE id = ANY($1) AND next_period_index > $2`, [plans.map((p) => p.id), k]);
      return row.n === plans.length;
    }, 15_000, 50);
    expect(Date.now() - t0).toBeLessThan(15_000);
  }
  for (const p of plans) {
    expect(await periods(p.id)).toEqual([0, 1, 2, 3]);
    expect(await planRow(p.id)).toMatchObject({ status: 'active', charges_created: 4, next_period_index: 4, next_charge_at: due(p, 4) });
  }
  // Both workers ran the schedule (one scheduler, many runs); the unique (plan, period) held either way.
  const [dups] = await sql(`SELECT count(*)::int AS n FROM (SELECT plan_id, period_index FROM payment_requests WHERE plan_id IS NOT NULL
    GROUP BY 1, 2 HAVING count(*) > 1) d`);
  expect(dups.n).toBe(0);
});

it('a service down across three periods creates one charge, for the latest period, when a restarted worker returns', async () => {
  const p = await newPlan(dash, 'week', new Date(clock.now().getTime() + 60_000));
  await reach(p, 0);
  expect(await periods(p.id)).toEqual([0]);
  await a.close();
  await b.close();
  // Down from just after period 0 until just after period 3 (three due dates missed while down).
  clock.set(new Date(due(p, 3).getTime() + 5_000));
  a = await startWorker();
  // The session lives in Postgres: the same cookie works on the new instance.
  dash = dashboardClient(a, dash.merchantId, dash.cookie, dash.csrf);
  await waitFor(async () => (await planRow(p.id)).next_period_index === 4, 15_000, 50);
  expect(await periods(p.id)).toEqual([0, 3]);
  expect(await planRow(p.id)).toMatchObject({ charges_created: 2, next_charge_at: due(p, 4), status: 'active' });
  b = await startWorker();
});

it('a disabled merchant\'s plans skip their periods (not missed); enabled again, the next period is charged', async () => {
  const other = await createOnboardedMerchant(a, partner.testKey);
  const c = await signInDashboard(a, other.wallet);
  const p = await newPlan(c, 'day', new Date(clock.now().getTime() + 60_000));
  await reach(p, 0);
  expect((await admin(a, 'POST', `/merchants/${other.id}/disable`)).status).toBe(200);
  await reach(p, 1);
  await reach(p, 2);
  expect(await periods(p.id)).toEqual([0]);
  expect(await planRow(p.id)).toMatchObject({ status: 'active', missed_in_row: 0, charges_created: 1, next_period_index: 3 });
  expect((await admin(a, 'POST', `/merchants/${other.id}/enable`)).status).toBe(200);
  await reach(p, 3);
  expect(await periods(p.id)).toEqual([0, 3]);
});

it('two charges that expire unpaid in a row pause the plan with reason unpaid; nothing more is charged', async () => {
  const p = await newPlan(dash, 'day', new Date(clock.now().getTime() + 60_000));
  await reach(p, 0);
  await lapse(p.id, 0);
  await waitFor(async () => (await planRow(p.id)).missed_in_row === 1, 15_000, 50);
  expect((await planRow(p.id)).status).toBe('active');
  await reach(p, 1);
  await lapse(p.id, 1);
  await waitFor(async () => (await planRow(p.id)).status === 'paused', 15_000, 50);
  expect(await planRow(p.id)).toMatchObject({ pause_reason: 'unpaid', next_charge_at: null, missed_in_row: 2 });
  // A plan of the same schedule, still active, shows when the scheduler has run past the paused plan's dates.
  const sentinel = await newPlan(dash, 'day', p.startAt);
  await reach(sentinel, 4);
  expect(await periods(sentinel.id)).toContain(4);
  expect(await periods(p.id)).toEqual([0, 1]);
});

it('a paid charge resets the missed count', async () => {
  const p = await newPlan(dash, 'day', new Date(clock.now().getTime() + 60_000));
  await reach(p, 0);
  await lapse(p.id, 0);
  await waitFor(async () => (await planRow(p.id)).missed_in_row === 1, 15_000, 50);
  await reach(p, 1);
  const [charge] = await sql(`SELECT id, amount FROM payment_requests WHERE plan_id = $1 AND period_index = 1`, [p.id]);
  const payer = DEV_KEYS[2];
  await mint(env.rpcUrl, env.token, new Wallet(payer).address, BigInt(charge.amount));
  const tx = await transferToken(env.rpcUrl, env.token, payer, m.wallet.address, BigInt(charge.amount));
  expect((await call(a.publicUrl, 'POST', `/pay/api/${charge.id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
  await waitFor(async () => (await planRow(p.id)).missed_in_row === 0, 30_000, 100);
  // One more miss after the payment is the first in a row again: the plan stays active.
  await reach(p, 2);
  await lapse(p.id, 2);
  await waitFor(async () => (await planRow(p.id)).missed_in_row === 1, 15_000, 50);
  expect((await planRow(p.id)).status).toBe('active');
});

it('concurrent advances are serialised: each moves one period, never two charges for one period', async () => {
  const p = await newPlan(dash, 'month', new Date(clock.now().getTime() + 86_400_000));
  const replies = await Promise.all(Array.from({ length: 6 }, () => dash.call('POST', `/plans/${p.id}/advance`)));
  const ok = replies.filter((r) => r.status === 200).map((r) => r.body.status);
  const refused = replies.filter((r) => r.status === 409).map((r) => r.body.error);
  // Period 0 created; period 0 missed and 1 created; period 1 missed → paused (PLAN_MAX_MISSED 2); the rest refused.
  expect(ok.sort()).toEqual(['active', 'active', 'paused']);
  expect(refused).toEqual(['plan_not_active', 'plan_not_active', 'plan_not_active']);
  expect(await periods(p.id)).toEqual([0, 1]);
  expect(await planRow(p.id)).toMatchObject({ status: 'paused', pause_reason: 'unpaid', charges_created: 2, missed_in_row: 2 });
});

it('plans whose charge keeps failing never keep other due plans from being charged; fixed, each is charged for its latest due period', async () => {
  // 21 plans of a merchant whose charges are refused (its currency is not theirs and has no rate), due hours before the healthy plan:
  // more than one run takes (PLAN_SCHEDULER_BATCH), so oldest-due-first alone would try them, and only them, in every run.
  const broken = await createOnboardedMerchant(a, partner.testKey);
  const start = new Date(clock.now().getTime() - 3 * 86_400_000 - 3_600_000); // period 3 is the latest due
  const failing: string[] = (
    await sql(
      `INSERT INTO plans (id, partner_id, merchant_id, test_mode, token, title, fiat_amount, fiat_currency, "interval", interval_count,
                          start_at, expiry_minutes, next_period_index, next_charge_at)
       SELECT gen_random_uuid(), $1, $2, true, 'seeded-' || gen_random_uuid(), 'Broken', 1000 + n, 'usd', 'day', 1, $3, 60, 0, $3
         FROM generate_series(1, 21) n RETURNING id`,
      [partner.id, broken.id, start],
    )
  ).map((r) => r.id);
  // The merchant's currency stands for one whose rate is gone. Changed under its plans, which the schema refuses
  // (merchants_currency_keeps_plans), so with triggers off for this one statement's session.
  await sql(`BEGIN; SET LOCAL session_replication_role = replica; UPDATE merchants SET display_currency = 'zzz' WHERE id = '${broken.id}'; COMMIT`);
  try {
    const healthy = await newPlan(dash, 'day', new Date(clock.now().getTime() + 60_000));
    // Charged in the run after the one that tries 20 failing plans (the clock's jump makes those tried before
    // it due again, ahead of it): twice 20 failing attempts at most, ~80 ms each on a loaded machine; starved,
    // as before retry_at ordered the runs, it would never be charged at all.
    await reach(healthy, 0, 60_000);
    expect(await periods(healthy.id)).toEqual([0]);
    // Each failure is stored on its plan and retried after a backoff; the plans wait, still due, with nothing charged.
    await waitFor(async () => (await sql(`SELECT count(*)::int AS n FROM plans WHERE id = ANY($1) AND charge_failures > 0`, [failing]))[0].n === failing.length, 15_000, 50);
    const [stuck] = await sql(`SELECT min(retry_at) AS first, count(*) FILTER (WHERE status = 'active' AND next_period_index = 0)::int AS n
      FROM plans WHERE id = ANY($1)`, [failing]);
    expect(stuck.n).toBe(failing.length);
    expect(stuck.first.getTime()).toBeGreaterThan(clock.now().getTime());
    expect((await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE plan_id = ANY($1)`, [failing]))[0].n).toBe(0);
    // The rate is back (here: the merchant's currency is one with a rate); once their retry time has come, each is
    // charged once, for its latest due period only, and its failures are forgotten.
    await sql(`UPDATE merchants SET display_currency = 'usd' WHERE id = $1`, [broken.id]);
    clock.set(new Date(clock.now().getTime() + 60 * 60_000));
    await waitFor(async () => (await sql(`SELECT count(*)::int AS n FROM plans WHERE id = ANY($1) AND next_period_index = 4`, [failing]))[0].n === failing.length, 30_000, 100);
    const charged = await sql(`SELECT period_index, count(*)::int AS n FROM payment_requests WHERE plan_id = ANY($1) GROUP BY 1`, [failing]);
    expect(charged).toEqual([{ period_index: 3, n: failing.length }]);
    const [after] = await sql(`SELECT count(*)::int AS n FROM plans WHERE id = ANY($1) AND charge_failures = 0 AND retry_at IS NULL AND charges_created = 1`, [failing]);
    expect(after.n).toBe(failing.length);
  } finally {
    await sql(`UPDATE plans SET status = 'canceled', next_charge_at = NULL WHERE id = ANY($1)`, [failing]);
  }
}, 180_000);
