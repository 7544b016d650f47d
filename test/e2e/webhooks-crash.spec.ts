import type { ChildProcess } from 'node:child_process';
import { start, type Running } from '../../src/bootstrap';
import { verifyWebhook } from '../../sdk/webhook-verify/src/index';
import { admin, createOnboardedMerchant, createPartner } from '../factories/partners';
import { recordProofEvent } from '../factories/events';
import { mustCreateRequest } from '../factories/requests';
import { loadConfig } from '../../src/config/config';
import { startService, testEnvVars, type TestService } from '../support/app';
import { Receiver } from '../support/receiver';
import { testEnv } from '../support/test-env';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';
import { spawnWorker as spawnWorkerProcess } from '../support/worker-process';

/*
 * A worker process killed with SIGKILL in the middle of a delivery: the job's lock expires, another worker
 * takes the job over and delivers it again under the same delivery_id, and the delivery is recorded once.
 * The API side runs in this process without a worker; the first worker is a separate `--worker` process.
 */
// Read once: the API side, the worker process and the worker that takes over share this one environment.
const T = testEnv();
const WEBHOOK_ENV = {
  WEBHOOK_RETRY_DELAYS_MS: '200,400',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_TIMEOUT_MS: '5000',
  // One attempt of a partner at a time: its next attempt waits in the gate and runs on in the same job.
  WEBHOOK_PARTNER_CONCURRENCY: '1',
  // An attempt without a job is taken for stalled 5 s + 2 s after its claim (production: 8 s + 30 s), and the
  // re-drive looks every second (production: 15 s): the second test waits for that, not for production periods.
  WEBHOOK_STALL_MARGIN_MS: '2000',
  WEBHOOK_REDRIVE_MS: '1000',
  // Queues of this file alone, so no other worker takes the job.
  REDIS_PREFIX: `${T.redisPrefix}-whcrash`,
};

/** The environment testConfig() builds its configuration from, for the worker processes. */
function workerEnv(): Record<string, string> {
  return testEnvVars(WEBHOOK_ENV);
}

function spawnWorker(): Promise<ChildProcess> {
  return spawnWorkerProcess(workerEnv());
}

let svc: TestService;
/** Direct SQL on the run's database, for arranging and checking stored state. */
const db = { query: sql };
let rec: Receiver;
let rec2: Receiver | undefined;
let child: ChildProcess | undefined;
let second: Running | undefined;

beforeAll(async () => {
  svc = await startService({ worker: false, env: workerEnv() });
  rec = await Receiver.start();
});
afterAll(async () => {
  await closeSql();
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await second?.close();
  await svc?.close();
  await rec?.close();
  await rec2?.close();
});

it('a worker killed with SIGKILL mid-delivery → delivered again with the same delivery_id, recorded as delivered once', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const put = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: rec.url, enabled: true });
  expect(put.status).toBe(200);
  const secret = put.body.secret as string;

  child = await spawnWorker();
  const exited = new Promise((resolve) => child!.once('exit', (code, signal) => resolve(signal)));

  // The first call is held open; the worker that sent it dies while waiting for the answer.
  rec.plan({ hang: true }).otherwise({ status: 200 });
  const request = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 4200 });
  const ev = await recordProofEvent(svc, { partnerId: p.id, requestId: request.request_id });

  await rec.waitForCalls(1, 20_000);
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  const [mid] = await db.query(`SELECT state, attempts FROM webhook_events WHERE id = $1`, [ev.id]);
  expect(mid).toEqual({ state: 'delivering', attempts: 0 });

  // Another worker (in this process) takes over once the dead worker's lock has expired.
  second = await start(loadConfig(workerEnv()), { http: false, worker: true }, { logger: false });
  const calls = await rec.waitForCalls(2, 40_000);
  const deadline = Date.now() + 5000;
  let row: { state: string; attempts: number } | undefined;
  while (Date.now() < deadline) {
    [row] = await db.query(`SELECT state, attempts FROM webhook_events WHERE id = $1`, [ev.id]);
    if (row!.state === 'delivered') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(row).toEqual({ state: 'delivered', attempts: 1 });

  expect(calls.map((c) => c.headers['x-service-delivery'])).toEqual([ev.id, ev.id]);
  for (const c of calls) expect(verifyWebhook(c.rawBody, c.headers['x-service-signature'] as string, secret).delivery_id).toBe(ev.id);
  const attempts = await db.query(`SELECT attempt, status_code, outcome FROM webhook_attempts WHERE event_id = $1`, [ev.id]);
  expect(attempts).toEqual([{ attempt: 1, status_code: 200, outcome: 'delivered' }]);
  await new Promise((r) => setTimeout(r, 1000));
  expect(rec.calls).toHaveLength(2);
}, 90_000);

it('a worker killed while running an attempt its slot took over from the gate (no job of its own) → the re-drive sends it again in that slot', async () => {
  // Only the worker spawned below may run this partner's attempts.
  await second?.close();
  second = undefined;
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  rec2 = await Receiver.start();
  const put = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: rec2.url, enabled: true });
  expect(put.status).toBe(200);
  // The first attempt is answered; the second, run on in the first one's slot, is held open.
  rec2.plan({ status: 200 }, { hang: true }).otherwise({ status: 200 });

  const request = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 4300 });
  const first = await recordProofEvent(svc, { partnerId: p.id, requestId: request.request_id });
  const runOn = await recordProofEvent(svc, { partnerId: p.id, requestId: request.request_id, event: 'payment.proof_verified' });
  child = await spawnWorker();
  const exited = new Promise((resolve) => child!.once('exit', (code, signal) => resolve(signal)));
  await rec2.waitForCalls(2, 20_000);
  expect(rec2.calls.map((c) => c.headers['x-service-delivery'])).toEqual([first.id, runOn.id]);
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  const [mid] = await db.query(`SELECT state, attempts FROM webhook_events WHERE id = $1`, [runOn.id]);
  expect(mid).toEqual({ state: 'delivering', attempts: 0 });

  // No job carries it: the outbox re-drive finds it stalled (claimed longer ago than the attempt's deadline
  // plus WEBHOOK_STALL_MARGIN_MS) and queues it again in the slot the dead worker held, which nobody else may take meanwhile.
  second = await start(loadConfig(workerEnv()), { http: false, worker: true }, { logger: false });
  await rec2.waitUntil((calls) => calls.filter((c) => c.headers['x-service-delivery'] === runOn.id).length === 2, 90_000);
  await waitFor(async () => (await db.query(`SELECT state FROM webhook_events WHERE id = $1`, [runOn.id]))[0].state === 'delivered', 10_000);
  const attempts = await db.query(`SELECT attempt, status_code, outcome FROM webhook_attempts WHERE event_id = $1`, [runOn.id]);
  expect(attempts).toEqual([{ attempt: 1, status_code: 200, outcome: 'delivered' }]);
  for (const c of rec2.calls) expect(verifyWebhook(c.rawBody, c.headers['x-service-signature'] as string, put.body.secret).delivery_id).toBe(c.headers['x-service-delivery']);
}, 150_000);
