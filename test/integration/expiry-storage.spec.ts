import { Wallet } from 'ethers';
import { Client } from 'pg';
import { DEV_KEYS, mine, mint, transferToken } from '../../scripts/chain/local-node';
import { ExpiryService } from '../../src/modules/requests/application/expiry.service';
import { VerificationService } from '../../src/modules/requests/application/verification.service';
import { signInDashboard } from '../factories/dashboard';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Stored expiries. The service runs without its worker, so neither the delayed expiry job nor the scheduled
 * sweep runs: a lapsed request stays stored as open until the test's own call, as it does in production while
 * a job is late (Redis away, the worker down).
 */
let svc: TestService;
let partner: TestPartner;
let merchant: Awaited<ReturnType<typeof createOnboardedMerchant>>;

beforeAll(async () => {
  // One missed charge pauses a plan, so a miss counted (or not) shows as the plan's status.
  svc = await startService({ env: { PLAN_MAX_MISSED: '1' } });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
});

/** `n` copies of request `id` under fresh ids and keys, with their amounts unlocked (no uniqueness clash). */
async function copies(id: string, n: number, expiresAt: string, proofStatus = 'none'): Promise<void> {
  await sql(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, status, proof_status,
       fiat_amount, fiat_currency, rate, amount, chain_id, token_address, recipient, amount_locked, payment_mode,
       metadata, source, expires_at, claim_until, created_at, updated_at)
     SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, 'sweep-' || gen_random_uuid(), status, $3,
       fiat_amount, fiat_currency, rate, amount, chain_id, token_address, recipient, false, payment_mode,
       metadata, source, ${expiresAt}, ${expiresAt} + interval '1 hour', created_at, updated_at
       FROM payment_requests, generate_series(1, $2::int)
      WHERE id = $1`,
    [id, n, proofStatus],
  );
}

/** This merchant's stored rows by status (other specs on the run's database leave lapsed rows of their own). */
const storedByStatus = async (): Promise<Record<string, number>> =>
  Object.fromEntries(
    (await sql<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM payment_requests WHERE merchant_id = $1 GROUP BY status`,
      [merchant.id],
    )).map((r) => [r.status, r.n]),
  );

describe('the sweep', () => {
  it('one run stores a backlog larger than its batch; open, future and proof-attached requests stay', async () => {
    const created = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
      key: partner.testKey,
      body: { account_id: merchant.id, fiat_amount_int: 1000 },
    });
    expect(created.status).toBe(201);
    const id = created.body.request_id as string;
    // What earlier specs on this database left lapsed and unstored is stored first, so the counts below are ours.
    await svc.app.get(ExpiryService).sweep();
    await copies(id, 2500, `now() - interval '1 minute'`);
    await copies(id, 10, `now() + interval '1 hour'`);
    // Past expires_at with a proof attached: its claim window is still open, so it may still verify.
    await copies(id, 10, `now() - interval '1 minute'`, 'attached');

    expect(await svc.app.get(ExpiryService).sweep()).toBe(2500);
    expect(await storedByStatus()).toEqual({ expired: 2500, requested: 21 });
    expect(await svc.app.get(ExpiryService).sweep()).toBe(0);
  });
});

describe('a payment after the deadline, before the expiry was stored', () => {
  const env = testEnv();

  beforeAll(async () => {
    await mint(env.rpcUrl, env.token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
  });

  /** A request whose expires_at passed a second ago, paid on chain; its stored status is still `requested`. */
  async function lapsedAndPaid(fiat: number): Promise<{ id: string; txHash: string }> {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: fiat } });
    expect(r.status).toBe(201);
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, [r.body.request_id]);
    const tx = await transferToken(env.rpcUrl, env.token, DEV_KEYS[1], merchant.wallet.address, BigInt(r.body.amount));
    await mine(env.rpcUrl, 1);
    expect((await stored(r.body.request_id)).status).toBe('requested');
    return { id: r.body.request_id, txHash: tx.txHash };
  }

  const stored = async (id: string) => (await sql(`SELECT status, proof_status, expired_at FROM payment_requests WHERE id = $1`, [id]))[0];
  const shown = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey })).body;

  it('a payer\'s proof leaves it expired (stored so in the same transaction), not requested again', async () => {
    const { id, txHash } = await lapsedAndPaid(1301);
    expect((await shown(id)).status).toBe('expired');
    const proof = await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: txHash } });
    expect(proof.status).toBe(200);
    expect(proof.body).toMatchObject({ status: 'expired', proof_status: 'attached' });
    expect(await stored(id)).toMatchObject({ status: 'expired', proof_status: 'attached', expired_at: expect.any(Date) });
    expect(await shown(id)).toMatchObject({ status: 'expired', proof_status: 'attached' });

    // Its verification keeps the status (DESIGN §3: money that arrived is reported, the status stays).
    expect((await svc.app.get(VerificationService).verify(id, txHash, 'payer')).kind).toBe('verified');
    expect(await shown(id)).toMatchObject({ status: 'expired', proof_status: 'verified' });
  });

  it('a payment the chain scan finds (no proof submitted) leaves it expired and verified', async () => {
    const { id, txHash } = await lapsedAndPaid(1302);
    expect((await svc.app.get(VerificationService).verify(id, txHash, 'chain_scan')).kind).toBe('verified');
    expect(await stored(id)).toMatchObject({ status: 'expired', proof_status: 'verified', expired_at: expect.any(Date) });
    expect(await shown(id)).toMatchObject({ status: 'expired', proof_status: 'verified' });
  });
});

describe('a plan whose open charge lapsed before its expiry was stored', () => {
  /** A monthly plan starting now (its charge 0 made at once), that charge past its deadline and stored open. */
  async function planWithLapsedCharge(): Promise<{ planId: string; dash: Awaited<ReturnType<typeof signInDashboard>> }> {
    const dash = await signInDashboard(svc, merchant.wallet);
    const p = await dash.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 2500, interval: 'month' } });
    expect(p.status).toBe(201);
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second' WHERE plan_id = $1`, [p.body.plan_id]);
    return { planId: p.body.plan_id, dash };
  }
  /**
   * Charge 0 lapses, and period 1 comes due, at the same moment four seconds from now: after the first sweep of a
   * worker started right away (at its start), before its next one (EXPIRY_SWEEP_INTERVAL_MS an hour).
   */
  async function lapsesAsPeriodOneFallsDue(planId: string): Promise<void> {
    await sql(`UPDATE payment_requests SET expires_at = now() + interval '4 seconds' WHERE plan_id = $1`, [planId]);
    await sql(
      `UPDATE plans SET start_at = now() + interval '4 seconds' - interval '1 month', next_charge_at = now() + interval '4 seconds' WHERE id = $1`,
      [planId],
    );
  }
  const chargesOf = (planId: string) => sql(`SELECT period_index, status FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [planId]);

  type Statement = [text: string, params: unknown[]];
  /**
   * A hand-made transaction meeting one of the service's on a charge and its plan, in the other lock order: it
   * runs `first` (taking what it holds), calls `start` (the service's side, unless that runs on its own), waits
   * until the service's side waits on what it holds (in a statement starting with `waiting`), then runs `then`.
   * Postgres rolls back the one whose deadlock check (deadlock_timeout, 1 s after it began to wait) runs once
   * both wait: the service's, unless `then` came over a second late (a loaded machine). Returns whether the
   * hand-made transaction committed, i.e. the service's was the one rolled back.
   */
  async function meetInDeadlock(o: { first: Statement; start?: () => void; waiting: string; then: Statement[] }): Promise<boolean> {
    const mine = new Client({ connectionString: testEnv().databaseUrl });
    await mine.connect();
    try {
      const [{ pid }] = (await mine.query(`SELECT pg_backend_pid() AS pid`)).rows;
      await mine.query('BEGIN');
      await mine.query(...o.first);
      o.start?.();
      await waitFor(async () => (await sql(
        `SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2 || '%'`, [pid, o.waiting],
      )).length > 0, 15_000, 50);
      try {
        for (const statement of o.then) await mine.query(...statement);
      } catch (e) {
        if ((e as { code?: string }).code !== '40P01') throw e;
        await mine.query('ROLLBACK');
        return false;
      }
      await mine.query('COMMIT');
      return true;
    } finally {
      await mine.end();
    }
  }
  const expireCharge = (id: string): Statement => [`UPDATE payment_requests SET status = 'expired', expired_at = now(), updated_at = now() WHERE id = $1`, [id]];
  const countMiss = (planId: string): Statement => [`UPDATE plans SET missed_in_row = missed_in_row + 1, updated_at = now() WHERE id = $1`, [planId]];

  it('the test clock\'s advance counts its miss first: the plan pauses (PLAN_MAX_MISSED 1) and no next charge is made', async () => {
    const { planId, dash } = await planWithLapsedCharge();
    const r = await dash.call('POST', `/plans/${planId}/advance`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'paused', pause_reason: 'unpaid', charges_created: 1 });
    expect(await chargesOf(planId)).toEqual([{ period_index: 0, status: 'expired' }]);
  });

  it('the scheduler meeting the expiry job on that charge (a deadlock) takes the plan again at once, not after a backoff', async () => {
    const worker = await startService({
      worker: true,
      env: { PLAN_SCHEDULER_INTERVAL_MS: '200', EXPIRY_SWEEP_INTERVAL_MS: '3600000' },
    });
    try {
      for (let tries = 1; ; tries++) {
        const { planId } = await planWithLapsedCharge();
        await lapsesAsPeriodOneFallsDue(planId);
        const [charge] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1`, [planId]);
        // An expiry job (its sweep batch) holds the charge, then wants the plan; once due, the scheduler
        // holds the plan and waits for the charge.
        const schedulerRolledBack = await meetInDeadlock({
          first: [`SELECT 1 FROM payment_requests WHERE id = $1 FOR UPDATE`, [charge.id]],
          waiting: 'UPDATE "payment_requests"',
          then: [expireCharge(charge.id), countMiss(planId)],
        });
        // Either way the plan gets its next charge at once, its miss counted once and no failure backoff; rolled
        // back, the scheduler took the plan again at once.
        await waitFor(async () => (await chargesOf(planId)).length === 2, 10_000, 50);
        expect(await chargesOf(planId)).toEqual([{ period_index: 0, status: 'expired' }, { period_index: 1, status: 'requested' }]);
        expect((await sql(`SELECT status, missed_in_row, charge_failures, retry_at FROM plans WHERE id = $1`, [planId]))[0]).toEqual({
          status: 'active', missed_in_row: 1, charge_failures: 0, retry_at: null,
        });
        if (schedulerRolledBack) break;
        expect(tries).toBeLessThan(5);
      }
    } finally {
      await worker.close();
    }
  });

  it('a sweep batch meeting an advance on that plan (a deadlock) is run again at once: the miss is counted once, nothing thrown', async () => {
    for (let tries = 1; ; tries++) {
      const { planId } = await planWithLapsedCharge();
      const [charge] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1`, [planId]);
      // The advance holds the plan, then wants the charge; the sweep holds the charge, then wants the plan.
      let sweep: Promise<number> = Promise.resolve(0);
      const sweepRolledBack = await meetInDeadlock({
        first: [`SELECT 1 FROM plans WHERE id = $1 FOR UPDATE`, [planId]],
        start: () => {
          sweep = svc.app.get(ExpiryService).sweep();
          sweep.catch(() => undefined); // awaited below
        },
        waiting: 'SELECT', // the plan's lock (PlansRepository.lock)
        then: [expireCharge(charge.id), countMiss(planId)],
      });
      // Either way the sweep ends without an error, and the miss is counted once.
      await expect(sweep).resolves.toEqual(expect.any(Number));
      expect(await chargesOf(planId)).toEqual([{ period_index: 0, status: 'expired' }]);
      expect((await sql(`SELECT missed_in_row FROM plans WHERE id = $1`, [planId]))[0]).toEqual({ missed_in_row: 1 });
      // Rolled back, the sweep's batch was run again at once and found the charge stored expired by the advance.
      if (sweepRolledBack) break;
      expect(tries).toBeLessThan(5);
    }
  });

  it('the scheduler counts its miss first: the due plan pauses and gets no next charge (nor its notice)', async () => {
    const { planId } = await planWithLapsedCharge();
    // Only the scheduler can see the lapse then.
    await lapsesAsPeriodOneFallsDue(planId);
    const worker = await startService({
      worker: true,
      env: { PLAN_MAX_MISSED: '1', PLAN_SCHEDULER_INTERVAL_MS: '200', EXPIRY_SWEEP_INTERVAL_MS: '3600000' },
    });
    try {
      await waitFor(async () => (await sql(`SELECT status FROM plans WHERE id = $1`, [planId]))[0].status !== 'active', 15_000, 50);
      expect((await sql(`SELECT status, pause_reason, charges_created FROM plans WHERE id = $1`, [planId]))[0]).toEqual({
        status: 'paused', pause_reason: 'unpaid', charges_created: 1,
      });
      expect(await chargesOf(planId)).toEqual([{ period_index: 0, status: 'expired' }]);
    } finally {
      await worker.close();
    }
  });
});
