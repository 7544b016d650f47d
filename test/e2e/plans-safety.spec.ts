import { Wallet } from 'ethers';
import { Client } from 'pg';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Plans that would charge a payer wrongly: twice, or in the wrong currency.
 *
 * A plan charges in its own currency (the plan object's fiat_currency), and a charge is a request, always in its
 * merchant's currency. So a merchant's currency stays while it has a plan that can still charge: before, a
 * merchant that moved from usd to jpy had its $25.00 plan charge ¥2500.
 */
let svc: TestService;
let pa: TestPartner;
beforeAll(async () => {
  svc = await startService();
  pa = await createPartner(svc);
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

async function merchant(): Promise<DashboardClient> {
  return signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
}
async function plan(c: DashboardClient): Promise<Record<string, any>> {
  const r = await c.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 2500, interval: 'month' } });
  if (r.status !== 201) throw new Error(`plan create failed: ${r.status} ${r.text}`);
  return r.body;
}
const currencyOf = async (c: DashboardClient) => (await c.call('GET', '/me')).body.display_currency;

describe("a merchant's currency while it has plans", () => {
  it('409 currency_in_use while an active or paused plan charges in it; nothing changes; allowed once no plan can charge', async () => {
    const c = await merchant();
    const p = await plan(c);
    expect(p.fiat_currency).toBe('usd');
    const refused = await c.call('PATCH', '/me', { body: { display_currency: 'jpy', display_name: 'Renamed' } });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ ok: false, error: 'currency_in_use' });
    expect(await currencyOf(c)).toBe('usd');
    expect((await c.call('GET', '/me')).body.display_name).not.toBe('Renamed'); // the whole patch was refused
    // The same currency, or other fields alone, are fine.
    expect((await c.call('PATCH', '/me', { body: { display_currency: 'USD', display_name: 'Same' } })).status).toBe(200);
    expect((await c.call('POST', `/plans/${p.plan_id}/pause`)).body.status).toBe('paused');
    expect((await c.call('PATCH', '/me', { body: { display_currency: 'jpy' } })).status).toBe(409);
    expect((await c.call('POST', `/plans/${p.plan_id}/cancel`)).body.status).toBe('canceled');
    const changed = await c.call('PATCH', '/me', { body: { display_currency: 'jpy' } });
    expect(changed.status).toBe(200);
    expect(await currencyOf(c)).toBe('jpy');
    // A new plan takes the new currency, and so does its charge.
    const q = await plan(c);
    expect(q.fiat_currency).toBe('jpy');
    expect(await sql(`SELECT fiat_currency FROM payment_requests WHERE plan_id = $1`, [q.plan_id])).toEqual([{ fiat_currency: 'jpy' }]);
  });

  it('fiat_currency_code asserts the currency the form showed: another → 400 currency_mismatch, no plan and no charge', async () => {
    const c = await merchant();
    // The plan form was rendered in USD; the merchant then switched to EUR in another tab (no plan yet, so allowed).
    expect((await c.call('PATCH', '/me', { body: { display_currency: 'eur' } })).status).toBe(200);
    const body = { title: 'Gym', fiat_amount_int: 2500, interval: 'month' };
    const stale = await c.call('POST', '/plans', { body: { ...body, fiat_currency_code: 'usd' } });
    expect(stale.status).toBe(400);
    expect(stale.body).toEqual({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'eur' });
    expect(await sql(`SELECT id FROM plans WHERE merchant_id = $1`, [c.merchantId])).toEqual([]);
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1`, [c.merchantId])).toEqual([]);
    const made = await c.call('POST', '/plans', { body: { ...body, fiat_currency_code: 'EUR' } });
    expect(made.status).toBe(201);
    expect(made.body.fiat_currency).toBe('eur');
    expect((await c.call('POST', '/plans', { body: { ...body, fiat_currency_code: 'e' } })).body.error).toBe('invalid_request');
  });

  it('a plan already out of step with its merchant (made before the rule) charges nothing rather than the wrong currency', async () => {
    const c = await merchant();
    const p = await plan(c);
    // As a plan made before the schema rule, whose merchant then changed currency.
    await sql(`UPDATE plans SET fiat_currency = 'inr' WHERE id = $1`, [p.plan_id]);
    const r = await c.call('POST', `/plans/${p.plan_id}/advance`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'usd' });
    const charges = await sql(`SELECT period_index, fiat_currency, status FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [p.plan_id]);
    expect(charges).toEqual([{ period_index: 0, fiat_currency: 'usd', status: 'requested' }]);
  });

  it('the schema refuses a plan in a currency its merchant does not have, and a currency change under a plan, whatever the path', async () => {
    const c = await merchant();
    const p = await plan(c);
    const [{ merchant_id }] = await sql(`SELECT merchant_id FROM plans WHERE id = $1`, [p.plan_id]);
    await expect(sql(`UPDATE merchants SET display_currency = 'eur' WHERE id = $1`, [merchant_id])).rejects.toThrow(/plans that charge in usd/);
    await expect(
      sql(`INSERT INTO plans (id, partner_id, merchant_id, test_mode, token, title, fiat_amount, fiat_currency, "interval", interval_count,
             start_at, expiry_minutes, next_charge_at)
           SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, md5(random()::text), title, fiat_amount, 'eur', "interval", 1,
             now(), expiry_minutes, now() FROM plans WHERE id = $1`, [p.plan_id]),
    ).rejects.toThrow(/does not charge in eur/);
    expect(await sql(`SELECT display_currency FROM merchants WHERE id = $1`, [merchant_id])).toEqual([{ display_currency: 'usd' }]);
  });
});

describe('POST /dashboard/api/plans with an Idempotency-Key', () => {
  const body = { title: 'Gym', fiat_amount_int: 2500, interval: 'month', payer_email: 'ada@example.com' };
  const key = () => `plan-${Date.now()}-${Math.random().toString(16).slice(2)}`.padEnd(32, '0');
  const chargesOf = (planId: string) => sql(`SELECT period_index FROM payment_requests WHERE plan_id = $1`, [planId]);

  it('a retry replays the plan already made (200, same plan, one charge); new values are ignored', async () => {
    const c = await merchant();
    const k = key();
    const first = await c.call('POST', '/plans', { body, headers: { 'idempotency-key': k } });
    expect(first.status).toBe(201);
    const again = await c.call('POST', '/plans', { body: { ...body, fiat_amount_int: 9900 }, headers: { 'idempotency-key': k } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await chargesOf(first.body.plan_id)).toEqual([{ period_index: 0 }]);
    expect((await c.call('GET', '/plans')).body.plans.map((p: { plan_id: string }) => p.plan_id)).toEqual([first.body.plan_id]);
  });

  it('concurrent creates with one key make one plan and one charge; each caller gets that plan', async () => {
    const c = await merchant();
    const k = key();
    const replies = await Promise.all([...Array(5)].map(() => c.call('POST', '/plans', { body, headers: { 'idempotency-key': k } })));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(replies.map((r) => r.body.plan_id)).size).toBe(1);
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM plans p JOIN plans q ON q.merchant_id = p.merchant_id WHERE p.id = $1`, [replies[0].body.plan_id]);
    expect(n).toBe(1);
    expect(await chargesOf(replies[0].body.plan_id)).toEqual([{ period_index: 0 }]);
  });

  it('keys are per merchant; without a key each create is a new plan; a malformed key → 400 and nothing made', async () => {
    const [c, d] = [await merchant(), await merchant()];
    const k = key();
    const mine = await c.call('POST', '/plans', { body, headers: { 'idempotency-key': k } });
    const theirs = await d.call('POST', '/plans', { body, headers: { 'idempotency-key': k } });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.plan_id).not.toBe(mine.body.plan_id);
    const plain = [await c.call('POST', '/plans', { body }), await c.call('POST', '/plans', { body })];
    expect(plain.map((r) => r.status)).toEqual([201, 201]);
    expect(plain[0].body.plan_id).not.toBe(plain[1].body.plan_id);
    const bad = await c.call('POST', '/plans', { body, headers: { 'idempotency-key': 'short' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_idempotency_key');
    expect((await c.call('GET', '/plans')).body.plans).toHaveLength(3);
  });
});

describe("a charge refused by the schema's merchant rule inside a plan's transaction", () => {
  /*
   * The rule refuses a request whose merchant changed between create's read and its insert. Inside a plan's
   * transaction that refusal used to abort the transaction, and the replay read after it failed: 500. A test
   * trigger (firing before the rule) refuses this merchant's first insert once, as the rule does when the
   * merchant changed in that moment.
   */
  it('undoes only the insert and decides again on a fresh read: the advance succeeds with one new charge', async () => {
    const c = await merchant();
    const p = await plan(c);
    const [{ merchant_id }] = await sql(`SELECT merchant_id FROM plans WHERE id = $1`, [p.plan_id]);
    const seq = `refuse_once_${merchant_id.replace(/-/g, '')}`;
    await sql(`CREATE SEQUENCE ${seq}`);
    await sql(`CREATE FUNCTION ${seq}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.merchant_id = '${merchant_id}' AND nextval('${seq}') = 1 THEN
          RAISE EXCEPTION 'refused once' USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_requests_merchant_holds';
        END IF;
        RETURN NEW;
      END $$`);
    await sql(`CREATE TRIGGER a_${seq} BEFORE INSERT ON payment_requests FOR EACH ROW EXECUTE FUNCTION ${seq}()`);
    try {
      const r = await c.call('POST', `/plans/${p.plan_id}/advance`);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'active', charges_created: 2 });
      expect((await sql(`SELECT last_value::int AS n FROM ${seq}`))[0].n).toBeGreaterThanOrEqual(2); // refused, then inserted
      expect(await sql(`SELECT period_index FROM payment_requests WHERE plan_id = $1 ORDER BY 1`, [p.plan_id])).toEqual([{ period_index: 0 }, { period_index: 1 }]);
    } finally {
      await sql(`DROP TRIGGER a_${seq} ON payment_requests`);
      await sql(`DROP FUNCTION ${seq}()`);
      await sql(`DROP SEQUENCE ${seq}`);
    }
  });
});

describe("a payer's proof for a lapsed charge racing the scheduler's run on its plan (a helper's hunt)", () => {
  it('is answered 200 and attached: the deadlock Postgres ends by undoing the proof is run again, not answered 500', async () => {
    const m = await createOnboardedMerchant(svc, pa.testKey);
    const p = await plan(await signInDashboard(svc, m.wallet));
    const [charge] = await sql(`SELECT id, amount FROM payment_requests WHERE plan_id = $1`, [p.plan_id]);
    // Lapsed, its expiry not stored yet (its job late), still inside its claim window: paid late.
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second', claim_until = now() + interval '1 hour' WHERE id = $1`, [charge.id]);
    const env = testEnv();
    const payer = DEV_KEYS[4];
    await mint(env.rpcUrl, env.token, new Wallet(payer).address, BigInt(charge.amount));
    const tx = await transferToken(env.rpcUrl, env.token, payer, m.wallet.address, BigInt(charge.amount));

    // The scheduler's transaction, statement by statement: the plan locked (lockNextDue), then its lapsed
    // charges stored (storeLapsed), committed. The proof's transaction locks the charge, then the plan (the miss
    // its lapse counts): the two wait for each other until Postgres undoes one.
    const sched = new Client({ connectionString: env.databaseUrl });
    await sched.connect();
    try {
      const [{ pid: schedPid }] = (await sched.query(`SELECT pg_backend_pid() AS pid`)).rows;
      await sched.query('BEGIN');
      await sched.query(`SELECT id FROM plans WHERE id = $1 FOR UPDATE`, [p.plan_id]);
      const proof = call(svc.publicUrl, 'POST', `/pay/api/${charge.id}/proof`, { body: { tx_hash: tx.txHash } });
      await waitFor(async () => (await sql(
        `SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE 'SELECT "PlanEntity"%'`, [schedPid], // the plan's lock (PlansRepository.lock)
      )).length > 0, 15000, 20);
      const stored = sched.query(
        `UPDATE payment_requests SET status = 'expired', expired_at = now()
          WHERE plan_id = $1 AND status IN ('requested', 'opened') AND proof_status = 'none' AND expires_at <= now()`,
        [p.plan_id],
      ).then(async () => { await sched.query('COMMIT'); return 'committed'; }, async (e: Error) => { await sched.query('ROLLBACK'); return e.message; });
      const r = await proof;
      expect(await stored).toBe('committed');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ ok: true, request_id: charge.id, status: 'expired', proof_status: 'attached' });
    } finally {
      await sched.end();
    }
  });
});
