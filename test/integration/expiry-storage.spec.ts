import { ExpiryService } from '../../src/modules/requests/application/expiry.service';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';

/*
 * Stored expiries. The service runs without its worker, so neither the delayed expiry job nor the scheduled
 * sweep runs: a lapsed request stays stored as open until the test's own call, as it does in production while
 * a job is late (Redis away, the worker down).
 */
let svc: TestService;
let partner: TestPartner;
let merchant: Awaited<ReturnType<typeof createOnboardedMerchant>>;

beforeAll(async () => {
  svc = await startService();
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

