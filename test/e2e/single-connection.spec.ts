import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { start } from '../../src/bootstrap';
import { startService, testConfig, type TestService } from '../support/app';
import { call } from '../support/http';
import { PortalClient } from '../support/portal-client';

/*
 * The service on a pool of ONE Postgres connection. A transaction that awaits a second connection while
 * holding its own then cannot finish: it fails after the pool's wait limit (10 s) with a 500, where the
 * default pool of twenty hung for good once twenty ran at once (25 plan advances did, 2026-11-27). Every
 * change below runs in a transaction; each must answer as it does on a full pool. A new path that reads on
 * the pool inside its transaction fails here, deterministically, at its first call.
 * The API role only: the worker's chain scan reads on the pool inside its transaction (two at once at most).
 */
let svc: TestService;
let partner: TestPartner;
let dash: DashboardClient;
let merchantId: string;

beforeAll(async () => {
  svc = await startService({ env: { DATABASE_POOL_SIZE: '1' } });
  partner = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, partner.testKey);
  merchantId = m.id;
  dash = await signInDashboard(svc, m.wallet);
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

const ok = (r: { status: number; text: string }, status: number) => expect({ status: r.status, text: r.text }).toMatchObject({ status });

it('runs on one connection (the setting reaches the pool); a worker refuses fewer than 3', async () => {
  expect(svc.config.databasePoolSize).toBe(1);
  await expect(start(testConfig({ DATABASE_POOL_SIZE: '2' }), { http: false, worker: true })).rejects.toThrow(/DATABASE_POOL_SIZE.*at least 3 for a worker/);
});

it('admin changes: partner update, keys, webhook settings and rotation, merchant disable and enable, portal users', async () => {
  ok(await admin(svc, 'PATCH', `/partners/${partner.id}`, { name: 'One Connection Ltd' }), 200);
  const key = await admin(svc, 'POST', `/partners/${partner.id}/keys`, { mode: 'test' });
  ok(key, 201);
  ok(await admin(svc, 'DELETE', `/partners/${partner.id}/keys/${key.body.key_id}`), 200);
  ok(await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: 'http://127.0.0.1:9/hook', enabled: false }), 200);
  ok(await admin(svc, 'POST', `/partners/${partner.id}/webhook/rotate`), 200);
  ok(await admin(svc, 'POST', `/partners/${partner.id}/webhook/confirm-rotation`), 200);
  const other = await createOnboardedMerchant(svc, partner.testKey);
  ok(await admin(svc, 'POST', `/merchants/${other.id}/disable`), 200);
  ok(await admin(svc, 'POST', `/merchants/${other.id}/enable`), 200);
  ok(await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: `one-${randomBytes(3).toString('hex')}@example.com`, password: 'a long enough password', role: 'admin' }), 201);
});

it('partner API: creates (a replay and a held amount too) and a cancel', async () => {
  const KEY = `one-connection-${randomBytes(12).toString('hex')}`;
  const first = await mustCreateRequest(svc, partner.testKey, { account_id: merchantId, fiat_amount_int: 777, idempotency_key: KEY });
  const replay = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey, body: { account_id: merchantId, fiat_amount_int: 777, idempotency_key: KEY },
  });
  expect(replay.body.request_id).toBe(first.request_id);
  // The same price again: the converted amount is held, so the search (and its turn) runs.
  const second = await mustCreateRequest(svc, partner.testKey, { account_id: merchantId, fiat_amount_int: 777 });
  expect(second.amount).not.toBe(first.amount);
  ok(await call(svc.publicUrl, 'POST', `/api/v1/requests/${second.request_id}/cancel`, { key: partner.testKey }), 200);
});

it('portal: a sign-in (its session and audit row) and a change', async () => {
  const email = `portal-${randomBytes(3).toString('hex')}@example.com`;
  ok(await admin(svc, 'POST', `/partners/${partner.id}/users`, { email, password: 'another long password', role: 'admin' }), 201);
  const c = new PortalClient(svc.publicUrl);
  expect((await c.signIn(email, 'another long password')).status).toBe(303);
  const csrf = await c.csrf('/portal/keys');
  ok(await c.post('/portal/keys', { _csrf: csrf, mode: 'test', scopes: ['requests:read'], label: 'one connection' }), 201);
});

it('dashboard: a plan charged at once, advanced, paused, resumed, cancelled; a handle and a payment through it', async () => {
  const plan = await dash.call('POST', '/plans', { body: { title: 'One', fiat_amount_int: 1500, interval: 'month', max_charges: 10 } });
  ok(plan, 201);
  expect(plan.body.charges_created).toBe(1);
  ok(await dash.call('POST', `/plans/${plan.body.plan_id}/advance`), 200);
  ok(await dash.call('POST', `/plans/${plan.body.plan_id}/pause`), 200);
  ok(await dash.call('POST', `/plans/${plan.body.plan_id}/resume`), 200);
  ok(await dash.call('POST', `/plans/${plan.body.plan_id}/cancel`), 200);
  const handle = `one${randomBytes(3).toString('hex')}`;
  ok(await dash.call('PUT', '/handle', { body: { handle } }), 200);
  ok(await call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body: { fiat_amount_int: 250 } }), 201);
});

it('a merchant onboarded from scratch (profile, wallet proof, terms)', async () => {
  const m = await createOnboardedMerchant(svc, partner.testKey, {}, Wallet.createRandom() as unknown as Wallet);
  expect(m.merchant).toMatchObject({ onboarding_status: 'complete' });
});
