import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import type { Running } from '../../src/bootstrap';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { killableWorker, killedWorkerEnv, relayedReceipt, takeOver } from '../support/killed-worker';
import { waitFor } from '../support/wait';
import { killProcess } from '../support/worker-process';

/*
 * A worker killed (SIGKILL) after it claimed a receipt but before a single byte of the message reached the
 * mail server (it is still waiting for the server's 220 greeting). Nothing was handed over, so nothing could
 * be duplicated by sending it: the receipt must still go out once. The mailer itself treats a deadline before
 * DATA as transient (retried); a crash at the same point was declared "in doubt" and the receipt lost (a
 * crash hunt). The attempt now stores a hand-over mark just before the bytes go out; without it the re-drive
 * tries the message again.
 */
let svc: TestService;
let child: ChildProcess | undefined;
let second: Running | undefined;
let smtp: SmtpCatcher | undefined;
let silent: Server;
const held: Socket[] = [];
let port: number;
let env: Record<string, string>;

beforeAll(async () => {
  // A TCP listener that never greets: the worker connects and waits for 220.
  silent = createServer((s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  port = (silent.address() as AddressInfo).port;
  env = killedWorkerEnv(`smtp://127.0.0.1:${port}`, 2000, 'handover');
  svc = await startService({ worker: false, env });
});

afterAll(async () => {
  await closeSql();
  await killProcess(child);
  await second?.close();
  await svc?.close();
  await smtp?.down();
  for (const s of held) s.destroy();
  silent?.close();
});

it('a worker killed while still connecting to SMTP (nothing handed over) → the receipt is sent once, not lost', async () => {
  const customer = `pre-data-${randomBytes(3).toString('hex')}@example.com`;
  const { worker, exited } = await killableWorker(env);
  child = worker;
  const { id } = await relayedReceipt(svc, customer);

  // The worker has claimed the message and opened a TCP connection; the server has said nothing yet. The
  // claim is waited for, not the first connection: the worker's re-drive also takes up messages that earlier
  // files of this jest worker left pending, and one of those may connect first (a CI run killed it then).
  await waitFor(async () => {
    const [x] = await sql(`SELECT attempts = 1 AND lease_until IS NOT NULL AS claimed FROM notifications WHERE id = $1`, [id]);
    return x.claimed && held.length > 0;
  }, 30000, 20);
  worker.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  const [mid] = await sql(`SELECT status, attempts, lease_until IS NOT NULL AS leased FROM notifications WHERE id = $1`, [id]);
  expect(mid).toEqual({ status: 'pending', attempts: 1, leased: true });

  // The mail server now works; another worker takes over.
  for (const s of held) s.destroy();
  await new Promise<void>((r) => silent.close(() => r()));
  smtp = await SmtpCatcher.start(port);
  second = await takeOver(env);
  const row = await waitFor(async () => {
    const [x] = await sql(`SELECT status, attempts, last_error FROM notifications WHERE id = $1`, [id]);
    return x.status !== 'pending' && x;
  }, 30000);
  const attempts = await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`, [id]);
  expect(row).toMatchObject({ status: 'sent', attempts: 2 });
  expect(attempts).toEqual([{ attempt: 1, outcome: 'retry' }, { attempt: 2, outcome: 'sent' }]);
  expect(smtp.to(customer)).toHaveLength(1);
}, 90_000);
