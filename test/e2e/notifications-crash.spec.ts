import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import type { Running } from '../../src/bootstrap';
import { MetricsService } from '../../src/modules/ops/metrics.service';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { killableWorker, killedWorkerEnv, relayedReceipt, takeOver } from '../support/killed-worker';
import { sample } from '../support/metrics';
import { waitFor } from '../support/wait';
import { killProcess } from '../support/worker-process';

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
  env = killedWorkerEnv(smtp.url, 1000, 'ntcrash');
  svc = await startService({ worker: false, env });
});

afterAll(async () => {
  await closeSql();
  await killProcess(child);
  await second?.close();
  await svc?.close();
  await smtp?.down();
});

it('a worker killed after the SMTP server took the message → never sent twice; failed in doubt, listed', async () => {
  const customer = `crash-${randomBytes(3).toString('hex')}@example.com`;
  const { worker, exited } = await killableWorker(env);
  child = worker;
  // The whole message has arrived; the worker dies before the server's 250 reaches it.
  smtp.beforeAccept = async (mail) => {
    if (!mail.to.includes(customer)) return;
    worker.kill('SIGKILL');
    await exited;
  };

  const { id, requestId } = await relayedReceipt(svc, customer);

  expect(await exited).toBe('SIGKILL');
  const [mid] = await sql(`SELECT status, attempts, lease_until IS NOT NULL AS leased FROM notifications WHERE id = $1`, [id]);
  expect(mid).toEqual({ status: 'pending', attempts: 1, leased: true });

  // Another worker (in this process) takes the queue over; the re-drive decides the message once the lease ran out.
  const [{ at: secondStarted }] = await sql(`SELECT now() AS at`);
  second = await takeOver(env);
  const row = await waitFor(async () => {
    const [x] = await sql(`SELECT status, attempts, last_error, sent_at FROM notifications WHERE id = $1`, [id]);
    return x.status !== 'pending' && x;
  }, 30000);
  expect(row).toMatchObject({ status: 'failed', attempts: 1, sent_at: null });
  expect(row.last_error).toMatch(/in doubt/);
  expect(await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1`, [id])).toEqual([
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

  const listed = await fetch(`${svc.adminUrl}/admin/api/notifications?status=failed&request_id=${requestId}`, {
    headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
  });
  const body = (await listed.json()) as any;
  expect(body.notifications).toHaveLength(1);
  expect(body.notifications[0]).toMatchObject({ notification_id: id, status: 'failed', to: customer });
}, 90_000);
