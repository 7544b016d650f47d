import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { DEV_KEYS, mine, mint, transferToken } from '../../scripts/chain/local-node';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { Receiver } from '../support/receiver';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { sleep, waitFor } from '../support/wait';
import { closeSql, sql } from '../support/db';

/**
 * DESIGN §1: two API servers and two workers against one Postgres and one Redis behave like one of each —
 * no duplicate request, scan, claim, expiry or delivery. Both services here share one Redis prefix (so one set of
 * queues and schedulers) and the run's chain.
 */
let a: TestService;
let b: TestService;
/** Direct SQL on the run's database, for arranging and checking stored state. */
const db = { query: sql };
let partner: TestPartner;
let receiver: Receiver;
let merchant: { id: string; wallet: Wallet };
const env = testEnv();

beforeAll(async () => {
  const shared = {
    REDIS_PREFIX: `${env.redisPrefix}-scale-${randomBytes(3).toString('hex')}`,
    CHAIN_SCAN_INTERVAL_MS: '200',
    EXPIRY_SWEEP_INTERVAL_MS: '200',
    HEAD_POLL_MS: '100',
    VERIFY_POLL_MS: '200',
    RATE_LIMIT_SCALE: '100',
  };
  a = await startService({ worker: true, env: shared });
  b = await startService({ worker: true, env: shared });
  partner = await createPartner(a);
  merchant = await createOnboardedMerchant(a, partner.testKey);
  receiver = await Receiver.start();
  const hook = await admin(a, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: true });
  expect(hook.status).toBe(200);
  await mint(env.rpcUrl, env.token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
});

afterAll(async () => {
  await closeSql();
  await a?.close();
  await b?.close();
  await receiver?.close();
});

const create = (svc: TestService, body: Record<string, unknown>) =>
  call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, ...body } });

it('parallel creates with one key through both servers make one request', async () => {
  const key = randomBytes(24).toString('hex');
  const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => create(i % 2 ? a : b, { fiat_amount_int: 4321, idempotency_key: key })));
  expect(replies.every((r) => r.status === 200 || r.status === 201)).toBe(true);
  expect(new Set(replies.map((r) => r.body.request_id)).size).toBe(1);
  expect(replies.filter((r) => !r.body.idempotent_replay)).toHaveLength(1);
});

it('parallel creates of one price through both servers get distinct amounts', async () => {
  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i % 2 ? a : b, { fiat_amount_int: 777 })));
  expect(replies.every((r) => r.status === 201)).toBe(true);
  expect(new Set(replies.map((r) => r.body.amount)).size).toBe(20);
});

it('two workers scanning one chain verify a payment once', async () => {
  // A cursor left above the tip (another node of the same chain id, or a chain started afresh) must not
  // stall the scan.
  await db.query(`UPDATE chain_cursors SET last_block = 999999999 WHERE token_address = $1`, [env.token]);
  const r = await create(a, { fiat_amount_int: 1999 });
  const tx = await transferToken(env.rpcUrl, env.token, DEV_KEYS[1], merchant.wallet.address, BigInt(r.body.amount));
  await mine(env.rpcUrl, 1);
  await waitFor(async () => (await call(b.publicUrl, 'GET', `/api/v1/requests/${r.body.request_id}`, { key: partner.testKey })).body.proof_status === 'verified');
  await sleep(800); // more scan rounds on both workers
  const events = await db.query(`SELECT event FROM webhook_events WHERE request_id = $1`, [r.body.request_id]);
  expect(events.map((e) => e.event)).toEqual(['payment.proof_verified']);
  const [row] = await db.query(`SELECT tx_hash FROM payment_requests WHERE id = $1`, [r.body.request_id]);
  expect(row.tx_hash).toBe(tx.txHash);
  // Both workers consume the webhooks queue: the event reaches the partner once.
  const calls = await receiver.waitUntil((c) => c.some((x) => x.json().request_id === r.body.request_id));
  await sleep(1000);
  const ours = calls.filter((x) => x.json().request_id === r.body.request_id);
  expect(ours).toHaveLength(1);
  expect(ours[0].json().event).toBe('payment.proof_verified');
});

it('two workers expire a request once and leave one schedule per repeating job', async () => {
  const r = await create(b, { fiat_amount_int: 2999 });
  await db.query(`UPDATE payment_requests SET expires_at = now() + interval '50 milliseconds' WHERE id = $1`, [r.body.request_id]);
  await waitFor(async () => (await db.query(`SELECT status FROM payment_requests WHERE id = $1`, [r.body.request_id]))[0].status === 'expired');
  const [row] = await db.query(`SELECT expired_at, updated_at FROM payment_requests WHERE id = $1`, [r.body.request_id]);
  await sleep(600);
  const [again] = await db.query(`SELECT expired_at FROM payment_requests WHERE id = $1`, [r.body.request_id]);
  expect(again.expired_at).toEqual(row.expired_at);
  const { Queue } = await import('bullmq');
  const q = new Queue('scheduled', { connection: { host: '127.0.0.1', port: 6379 }, prefix: `${a.config.redisPrefix}:bull` });
  const schedulers = await q.getJobSchedulers();
  await q.close();
  expect(schedulers.map((s) => s.key).sort()).toEqual(['chain-scan', 'expiry-sweep']);
});

it('a merchant disabled through one server is refused at once by the other (merchant cache evicted everywhere)', async () => {
  const other = await createOnboardedMerchant(a, partner.testKey);
  const body = { account_id: other.id, fiat_amount_int: 500 };
  // Warm both servers' caches with the merchant as enabled.
  for (const svc of [a, b]) expect((await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body })).status).toBe(201);
  expect((await admin(a, 'POST', `/merchants/${other.id}/disable`)).status).toBe(200);
  await sleep(50);
  const refused = await call(b.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body });
  expect(refused.status).toBe(400);
  expect(refused.body.error).toBe('merchant_disabled');
  expect((await admin(b, 'POST', `/merchants/${other.id}/enable`)).status).toBe(200);
  await sleep(50);
  expect((await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body })).status).toBe(201);
});

it('a merchant cache that missed its eviction still cannot create a request for a disabled merchant', async () => {
  const other = await createOnboardedMerchant(a, partner.testKey);
  const body = { account_id: other.id, fiat_amount_int: 600 };
  expect((await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body })).status).toBe(201);
  // Disabled behind the service's back: no eviction message at all.
  await db.query(`UPDATE merchants SET disabled = true WHERE id = $1`, [other.id]);
  const refused = await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body });
  expect(refused.status).toBe(400);
  expect(refused.body.error).toBe('merchant_disabled');
});

it('a merchant cache that missed a wallet change prices the request for the new wallet, never the old one', async () => {
  const other = await createOnboardedMerchant(a, partner.testKey);
  const body = { account_id: other.id, fiat_amount_int: 610 };
  expect((await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body })).status).toBe(201);
  const newWallet = `0x${'5'.repeat(36)}${other.id.replace(/-/g, '').slice(0, 4)}`;
  await db.query(`UPDATE merchants SET wallet_address = $2 WHERE id = $1`, [other.id, newWallet]);
  const created = await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body });
  expect(created.status).toBe(201);
  const [row] = await db.query<{ recipient: string }>(`SELECT recipient FROM payment_requests WHERE id = $1`, [created.body.request_id]);
  expect(row.recipient).toBe(newWallet);
});

it('with a stale merchant cache, a replay of an earlier key still returns the original after a disable', async () => {
  const other = await createOnboardedMerchant(a, partner.testKey);
  const body = { account_id: other.id, fiat_amount_int: 620, idempotency_key: `stale-${other.id}` };
  const first = await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body });
  expect(first.status).toBe(201);
  await db.query(`UPDATE merchants SET disabled = true WHERE id = $1`, [other.id]);
  const replay = await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body });
  expect(replay.status).toBe(200);
  expect(replay.body).toMatchObject({ request_id: first.body.request_id, idempotent_replay: true });
  const fresh = await call(a.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { ...body, idempotency_key: `stale-2-${other.id}` } });
  expect(fresh.body.error).toBe('merchant_disabled');
});
