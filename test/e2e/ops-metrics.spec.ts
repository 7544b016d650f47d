import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { ALL_QUEUES } from '../../src/common/queue/queues';
import { MetricsService } from '../../src/modules/ops/metrics.service';
import { QUEUE_STATES } from '../../src/modules/ops/scrape-collectors';
import { recordProofEvent } from '../factories/events';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { abandonOpenDeliveries, closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { Receiver } from '../support/receiver';
import { sample } from '../support/metrics';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/**
 * Issue 6 item 4, metrics: /metrics on the admin listener only, in Prometheus text, with HTTP latency by
 * route pattern and status, queue depths per queue and state, the webhook backlog (read from Postgres at
 * scrape time), webhook attempts by outcome (counted by the worker) and verification latency (fed by the worker's verification jobs).
 */
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

beforeAll(async () => {
  // The chain scan an hour apart: had it found the payment first (it raced the payer's proof in a loaded run),
  // the proof would find the request paid by its hash and queue no verification job, so no latency is recorded.
  svc = await startService({ worker: true, env: { VERIFY_POLL_MS: '100', CHAIN_SCAN_INTERVAL_MS: '3600000', WEBHOOK_RETRY_DELAYS_MS: '200' } });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  await svc?.close();
  await closeSql();
});

async function scrape(): Promise<string> {
  const r = await call(svc.adminUrl, 'GET', '/metrics');
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text;
}

/** The value of one sample, or null when the series is absent. */
function sumOf(text: string, name: string): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

it('is not served on the public listener', async () => {
  const r = await call(svc.publicUrl, 'GET', '/metrics');
  expect(r.status).toBe(404);
  // Express ignores case and a trailing slash when routing; the listener gate must too.
  for (const path of ['/metrics/', '/METRICS', '/Metrics//', '/admin/queues/', '/ADMIN/API/rates']) {
    expect((await call(svc.publicUrl, 'GET', path)).status).toBe(404);
  }
  expect(r.body).toEqual({ ok: false, error: 'not_found' });
});

it('records HTTP latency under the matched route pattern and status, never the raw URL', async () => {
  const id = randomUUID();
  await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`); // 401
  await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey }); // 404
  await call(svc.adminUrl, 'GET', `/api/v1/accounts/${merchant.id}`, { key: partner.testKey }); // 200
  await call(svc.publicUrl, 'GET', `/no/such/${id}`); // unmatched 404

  const text = await scrape();
  expect(text).toContain('# TYPE prs_http_request_duration_seconds histogram');
  expect(sample(text, 'prs_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/requests/:id', status_code: '401' })).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'prs_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/requests/:id', status_code: '404' })).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'prs_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/accounts/:id', status_code: '200' })).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'prs_http_request_duration_seconds_bucket', { route: '/api/v1/requests/:id', status_code: '401', le: '+Inf' })).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'prs_http_request_duration_seconds_count', { method: 'GET', route: '(unmatched)', status_code: '404' })).toBeGreaterThanOrEqual(1);
  expect(text).not.toContain(id);
  expect(text).not.toContain(merchant.id);
  // Process metrics come along.
  expect(text).toContain('process_cpu_user_seconds_total');
  expect(text).toContain('nodejs_eventloop_lag_seconds');
});

it('reports the depth of every queue in every state, read at scrape time', async () => {
  const text = await scrape();
  for (const queue of ALL_QUEUES) {
    for (const state of QUEUE_STATES) {
      expect(sample(text, 'prs_queue_jobs', { queue, state })).not.toBeNull();
    }
  }
  expect(sample(text, 'prs_scrape_source_up', { source: 'queues' })).toBe(1);
});

it('reports the webhook backlog by state from Postgres, finished deliveries not included', async () => {
  const before = await scrape();
  expect(before).toContain('# TYPE prs_webhook_deliveries gauge');
  expect(sample(before, 'prs_scrape_source_up', { source: 'deliveries' })).toBe(1);

  // Arranged directly: a retry waiting its backoff (an hour: no worker takes it during the test), a finished
  // delivery, and an event recorded while webhooks were off.
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 777 });
  const rows = await sql<{ id: string }>(
    `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state, attempts, next_attempt_at) VALUES
       ($1, $2, 'payment.proof_attached', true, true, 'pending', 1, now() + interval '1 hour'),
       ($1, $2, 'payment.proof_verified', true, true, 'delivered', 1, NULL),
       ($1, $2, 'payment.proof_verified', true, false, 'skipped', 0, NULL) RETURNING id`,
    [partner.id, r.request_id],
  );
  try {
    const after = await scrape();
    const delta = (state: string) => (sample(after, 'prs_webhook_deliveries', { state }) ?? 0) - (sample(before, 'prs_webhook_deliveries', { state }) ?? 0);
    expect(delta('pending')).toBe(1);
    expect(delta('delivering')).toBe(0);
    expect(sample(after, 'prs_webhook_deliveries', { state: 'delivered' })).toBeNull();
    expect(sample(after, 'prs_webhook_deliveries', { state: 'skipped' })).toBeNull();
  } finally {
    await sql(`UPDATE webhook_events SET state = 'abandoned', next_attempt_at = NULL WHERE id = $1`, [rows[0].id]);
  }
});

it('counts the webhook attempts this process recorded, by outcome', async () => {
  // This process's worker sends whatever is open in the database: an earlier file of this jest worker that left
  // a delivery open would add its attempts to the counts.
  await abandonOpenDeliveries();
  const receiver = await Receiver.start();
  try {
    const put = await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: true });
    expect(put.status).toBe(200);
    const before = await scrape();
    expect(before).toContain('# TYPE prs_webhook_attempts_total counter');
    const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 778 });

    // One delivery refused once (503, retried) and then taken (200); another refused for good (410).
    receiver.plan({ status: 503 }, { status: 200 }, { status: 410 });
    const first = await recordProofEvent(svc, { partnerId: partner.id, requestId: r.request_id });
    await waitFor(async () => (await stateOf(first.id)) === 'delivered', 15000, 50);
    const second = await recordProofEvent(svc, { partnerId: partner.id, requestId: r.request_id, event: 'payment.proof_verified' });
    await waitFor(async () => (await stateOf(second.id)) === 'abandoned', 15000, 50);
    expect(receiver.calls.map((c) => c.headers['x-service-delivery'])).toEqual([first.id, first.id, second.id]);

    const after = await scrape();
    const delta = (outcome: string) => (sample(after, 'prs_webhook_attempts_total', { outcome }) ?? 0) - (sample(before, 'prs_webhook_attempts_total', { outcome }) ?? 0);
    expect(delta('retry')).toBe(1);
    expect(delta('delivered')).toBe(1);
    expect(delta('abandoned')).toBe(1);
  } finally {
    await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: false });
    await receiver.close();
  }
});

async function stateOf(eventId: string): Promise<string | undefined> {
  return (await sql<{ state: string }>(`SELECT state FROM webhook_events WHERE id = $1`, [eventId]))[0]?.state;
}

it('records verification latency when the worker verifies a real payment', async () => {
  const { rpcUrl, token } = testEnv();
  const payer = DEV_KEYS[1];
  const before = sumOf(await scrape(), 'prs_verification_duration_seconds_count');

  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 1234 });
  await mint(rpcUrl, token, new Wallet(payer).address, BigInt(r.amount));
  const tx = await transferToken(rpcUrl, token, payer, merchant.wallet.address, BigInt(r.amount));
  const proof = await call(svc.publicUrl, 'POST', `/pay/api/${r.request_id}/proof`, { body: { tx_hash: tx.txHash } });
  expect(proof.status).toBe(200);
  await waitFor(async () => {
    const got = await call(svc.publicUrl, 'GET', `/api/v1/requests/${r.request_id}`, { key: partner.testKey });
    return got.body.proof_status === 'verified';
  }, 30000, 100);

  const text = (await waitFor(async () => {
    const t = await scrape();
    return sumOf(t, 'prs_verification_duration_seconds_count') > before ? t : null;
  }, 10000, 100))!;
  expect(text).toContain('# TYPE prs_verification_duration_seconds histogram');
  // The payer's job verifies (or finds it verified: 'moot', should the scan at start-up have run late).
  const verified = sample(text, 'prs_verification_duration_seconds_count', { outcome: 'verified' }) ?? 0;
  const moot = sample(text, 'prs_verification_duration_seconds_count', { outcome: 'moot' }) ?? 0;
  expect(verified + moot).toBeGreaterThanOrEqual(1);
});

it('exports observeVerification for other code', async () => {
  svc.app.get(MetricsService).observeVerification(2.5, 'manual_recheck');
  const text = await scrape();
  expect(sample(text, 'prs_verification_duration_seconds_count', { outcome: 'manual_recheck' })).toBe(1);
  expect(sample(text, 'prs_verification_duration_seconds_bucket', { outcome: 'manual_recheck', le: '5' })).toBe(1);
  expect(sample(text, 'prs_verification_duration_seconds_bucket', { outcome: 'manual_recheck', le: '2' })).toBe(0);
});
