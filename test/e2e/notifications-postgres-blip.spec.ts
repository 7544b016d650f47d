import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { verifiedReceipt } from '../factories/notifications';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { TcpProxy } from '../support/tcp-proxy';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Postgres goes away for a second (a restart, a failover) while a receipt is being sent. Only the worker knows
 * the send's outcome, and it stores it once Postgres is back, within the message's lease. With one try to
 * store it, the lease ran out and the re-drive failed the message "in doubt" for good: a receipt the SMTP
 * server refused was never sent, and one it took read failed (a Postgres-outage hunt). The service reaches
 * Postgres through a proxy this file cuts and restores.
 */
let smtp: SmtpCatcher;
let svc: TestService;
let proxy: TcpProxy;

beforeAll(async () => {
  const url = new URL(testEnv().databaseUrl);
  proxy = new TcpProxy(Number(url.port || 5432), loseClaimReply);
  await proxy.start();
  url.host = `127.0.0.1:${proxy.port}`;
  smtp = await SmtpCatcher.start();
  svc = await startService({
    worker: true,
    env: {
      DATABASE_URL: url.toString(),
      SMTP_URL: smtp.url,
      NOTIFY_SEND_TIMEOUT_MS: '1000',
      NOTIFY_REDRIVE_MS: '500',
      NOTIFY_RETRY_BASE_MS: '100',
      NOTIFY_RETRY_MAX_MS: '200',
    },
  });
}, 60_000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await smtp?.down();
  await proxy?.stop();
});

/**
 * When armed: on the connection that sends a notification's claim, the COMMIT after it reaches Postgres (and is
 * applied), and the connection is cut before its answer reaches the service.
 */
let armed = false;
let claimCommitsLost = 0;
function loseClaimReply(client: Socket, upstream: Socket): void {
  let claimed = false;
  let committing = false;
  client.on('data', (chunk: Buffer) => {
    if (!armed) return;
    const text = chunk.toString('latin1');
    if (text.includes('UPDATE notifications SET attempts')) claimed = true;
    else if (claimed && text.includes('COMMIT')) committing = true;
  });
  // Runs before the proxy's relay of the answer, which skips a destroyed client.
  upstream.prependListener('data', () => {
    if (!committing) return;
    committing = false;
    claimed = false;
    armed = false;
    claimCommitsLost++;
    client.destroy();
  });
}

/** Cuts the service's Postgres connections now and lets new ones through a second later. */
function blip(): Promise<void> {
  return proxy.cut().then(() => void setTimeout(() => void proxy.restore(), 1000));
}

const settled = (id: string) =>
  waitFor(async () => {
    const [n] = await sql<{ status: string; attempts: number; last_error: string | null }>(`SELECT status, attempts, last_error FROM notifications WHERE id = $1`, [id]);
    return n && n.status !== 'pending' ? n : null;
  }, 30_000);

it('a receipt the SMTP server refused while Postgres was away is retried, not failed in doubt', async () => {
  const customer = `blip-${randomBytes(3).toString('hex')}@example.com`;
  let refusals = 0;
  smtp.rcptRule = (to) => {
    if (to !== customer || refusals > 0) return null;
    refusals++;
    void blip();
    return 451;
  };
  const { id } = await verifiedReceipt(svc, customer);
  await svc.app.get(NotificationRelay).enqueue([id]);
  expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 2 });
  expect(refusals).toBe(1);
  expect(smtp.to(customer)).toHaveLength(1);
  expect(await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`, [id])).toEqual([
    { attempt: 1, outcome: 'retry' },
    { attempt: 2, outcome: 'sent' },
  ]);
}, 60_000);

it('a receipt the SMTP server took while Postgres was away reads sent', async () => {
  const customer = `blip2-${randomBytes(3).toString('hex')}@example.com`;
  smtp.rcptRule = () => null;
  let cut = false;
  smtp.beforeAccept = async (mail) => {
    if (!mail.to.includes(customer) || cut) return;
    cut = true;
    await blip();
  };
  const { id } = await verifiedReceipt(svc, customer);
  await svc.app.get(NotificationRelay).enqueue([id]);
  expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 1, last_error: null });
  expect(smtp.to(customer)).toHaveLength(1);
}, 60_000);

it('a claim whose COMMIT went through with its answer lost is the worker\'s own: the receipt is sent once, not failed in doubt', async () => {
  // The connection cut right after the COMMIT (a failover, or the pool's query bound closing it): the claim
  // committed, the worker saw an error. Its retried job found the attempt taken, and the re-drive failed the
  // message in doubt when the lease ran out, never sent (the last session's note).
  const customer = `lost-${randomBytes(3).toString('hex')}@example.com`;
  smtp.rcptRule = () => null;
  smtp.beforeAccept = async () => undefined;
  const { id } = await verifiedReceipt(svc, customer);
  armed = true;
  await svc.app.get(NotificationRelay).enqueue([id]);
  expect(await settled(id)).toMatchObject({ status: 'sent', attempts: 1, last_error: null });
  expect(claimCommitsLost).toBe(1);
  expect(smtp.to(customer)).toHaveLength(1);
  expect(await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1`, [id])).toEqual([{ attempt: 1, outcome: 'sent' }]);
}, 60_000);
