import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { start, type Running } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { NotificationsOutbox } from '../../src/modules/notifications/notifications-outbox';
import { markVerified } from '../factories/notifications';
import { MetricsService } from '../../src/modules/ops/metrics.service';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, testEnvVars, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { sample } from '../support/metrics';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { spawnWorker } from '../support/worker-process';

/*
 * A worker process killed with SIGKILL between sending a receipt and recording it: the SMTP server has the
 * whole message, the worker dies before it can store the outcome. The message is not sent again: when its
 * lease runs out, the worker that takes over marks it failed "in doubt" (at most once; DESIGN §6 "at most
 * one message per (request, kind)"), and operators find it in GET /admin/api/notifications.
 */
let smtp: SmtpCatcher;
let svc: TestService;
let child: ChildProcess | undefined;
let second: Running | undefined;
let env: Record<string, string>;

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  env = testEnvVars({
    SMTP_URL: smtp.url,
    MAIL_FROM: 'receipts@mail.example.test',
    NOTIFY_SEND_TIMEOUT_MS: '1000',
    NOTIFY_REDRIVE_MS: '500',
    NOTIFY_RETRY_BASE_MS: '100',
    // Queues of this file alone, shared by the API side and both workers.
    REDIS_PREFIX: `${testEnv().redisPrefix}-ntcrash`,
  });
  svc = await startService({ worker: false, env });
});

afterAll(async () => {
  await closeSql();
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await second?.close();
  await svc?.close();
  await smtp?.down();
});

it('a worker killed after the SMTP server took the message → never sent twice; failed in doubt, listed', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const customer = `crash-${randomBytes(3).toString('hex')}@example.com`;
  const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 4321, customer_email: customer });

  child = await spawnWorker(env);
  const worker = child;
  const exited = new Promise((resolve) => worker.once('exit', (_code, signal) => resolve(signal)));
  // The whole message has arrived; the worker dies before the server's 250 reaches it.
  smtp.beforeAccept = async (mail) => {
    if (!mail.to.includes(customer)) return;
    worker.kill('SIGKILL');
    await exited;
  };

  const outbox = svc.app.get(NotificationsOutbox);
  const ids = await svc.app.get(DataSource).transaction(async (em) => {
    await markVerified(em, r.request_id);
    return outbox.requestVerified(em, { requestId: r.request_id, merchantId: m.id, customerEmail: customer, customerPhone: null });
  });
  expect(ids).toHaveLength(1);
  await svc.app.get(NotificationRelay).enqueue(ids);

  expect(await exited).toBe('SIGKILL');
  const [mid] = await sql(`SELECT status, attempts, lease_until IS NOT NULL AS leased FROM notifications WHERE id = $1`, [ids[0]]);
  expect(mid).toEqual({ status: 'pending', attempts: 1, leased: true });

  // Another worker (in this process) takes the queue over; the re-drive decides the message once the lease ran out.
  const [{ at: secondStarted }] = await sql(`SELECT now() AS at`);
  second = await start(loadConfig(env), { http: false, worker: true }, { logger: false });
  const row = await waitFor(async () => {
    const [x] = await sql(`SELECT status, attempts, last_error, sent_at FROM notifications WHERE id = $1`, [ids[0]]);
    return x.status !== 'pending' && x;
  }, 30000);
  expect(row).toMatchObject({ status: 'failed', attempts: 1, sent_at: null });
  expect(row.last_error).toMatch(/in doubt/);
  expect(await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1`, [ids[0]])).toEqual([
    { attempt: 1, outcome: 'in_doubt' },
  ]);
  expect(smtp.to(customer)).toHaveLength(1);
  // Counted for operators' alerts, like an in-doubt send (the second worker's re-drive decided it): this one
  // and any lapsed attempt that earlier files of the jest worker left behind (no other process decides now).
  const [{ n: decided }] = await sql(
    `SELECT count(*)::int AS n FROM notification_attempts a JOIN notifications x ON x.id = a.notification_id
      WHERE a.outcome = 'in_doubt' AND a.finished_at >= $1 AND x.channel = 'email'`,
    [secondStarted],
  );
  expect(decided).toBeGreaterThanOrEqual(1);
  expect(sample(await second.app.get(MetricsService).registry.metrics(), 'prs_notification_attempts_total', { channel: 'email', outcome: 'in_doubt' })).toBe(decided);

  const listed = await fetch(`${svc.adminUrl}/admin/api/notifications?status=failed&request_id=${r.request_id}`, {
    headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
  });
  const body = (await listed.json()) as any;
  expect(body.notifications).toHaveLength(1);
  expect(body.notifications[0]).toMatchObject({ notification_id: ids[0], status: 'failed', to: customer });
}, 90_000);
