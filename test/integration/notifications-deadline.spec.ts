import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { NotificationQueue, notificationJobId } from '../../src/modules/notifications/notification.queue';
import { NotificationsOutbox } from '../../src/modules/notifications/notifications-outbox';
import { markVerified } from '../factories/notifications';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

/*
 * One send has an overall deadline, connection included, inside the message's lease: whatever an SMTP server
 * does, the worker records the attempt before the re-drive could call it "in doubt", and records it as what
 * happened. The server is real (smtp-server, PIPELINING hidden so every command waits for its answer) behind
 * a proxy that holds each of its replies: slow on every step, each step within NOTIFY_SEND_TIMEOUT_MS.
 */
const T = 1000;
let smtp: SmtpCatcher;
let link: TcpProxy;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string };

beforeAll(async () => {
  smtp = await SmtpCatcher.start(0, { pipelining: false });
  link = new TcpProxy(smtp.port);
  await link.start();
  svc = await startService({
    worker: true,
    env: {
      SMTP_URL: `smtp://127.0.0.1:${link.port}`,
      MAIL_FROM: 'receipts@mail.example.test',
      NOTIFY_SEND_TIMEOUT_MS: String(T),
      NOTIFY_REDRIVE_MS: '100',
      NOTIFY_RETRY_BASE_MS: '300',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await link?.stop();
  await smtp?.down();
});

afterEach(() => {
  link.replyDelayMs = 0;
  smtp.beforeAccept = () => undefined;
});

const unique = () => randomBytes(4).toString('hex');

async function receiptFor(customer: string): Promise<{ id: string; requestId: string }> {
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 2500, customer_email: customer });
  const ids = await svc.app.get(DataSource).transaction(async (em) => {
    await markVerified(em, r.request_id);
    return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId: r.request_id, merchantId: merchant.id, customerEmail: customer, customerPhone: null });
  });
  expect(ids).toHaveLength(1);
  return { id: ids[0], requestId: r.request_id };
}

const relay = (id: string) => svc.app.get(NotificationRelay).enqueue([id]);
const row = async (id: string) =>
  (await sql<{ status: string; attempts: number; leased: boolean; last_error: string | null }>(
    `SELECT status, attempts, lease_until IS NOT NULL AS leased, last_error FROM notifications WHERE id = $1`,
    [id],
  ))[0];
const attempts = (id: string) =>
  sql<{ attempt: number; outcome: string; error: string | null }>(
    `SELECT attempt, outcome, error FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`,
    [id],
  );

it('slow on every step, the deadline passes before DATA → recorded as a retry, nothing sent; sent once when the server keeps to the deadline', async () => {
  const customer = `slow-${unique()}@example.com`;
  // Six replies (greeting, EHLO, MAIL, RCPT, DATA, end of data) at 0.6 T each: 3.6 T in all, past the lease
  // (3 T); the deadline (2 T) falls while RCPT waits for its answer.
  link.replyDelayMs = 0.6 * T;
  const m = await receiptFor(customer);
  await relay(m.id);
  const [first] = (await waitFor(async () => {
    const log = await attempts(m.id);
    return log.length > 0 && log[0].outcome !== 'sending' ? log : null;
  }, 20000))!;
  expect(first).toMatchObject({ attempt: 1, outcome: 'retry' });
  expect(first.error).toMatch(/deadline/);
  expect(smtp.to(customer)).toHaveLength(0);

  // Still slow on every step (0.25 T), but six steps end within the deadline: sent, and recorded so.
  link.replyDelayMs = 0.25 * T;
  await waitFor(async () => (await row(m.id)).status === 'sent', 20000);
  const log = await attempts(m.id);
  expect(log.at(-1)!.outcome).toBe('sent');
  expect(log.slice(0, -1).every((a) => a.outcome === 'retry' && /deadline/.test(a.error ?? ''))).toBe(true);
  expect(await row(m.id)).toMatchObject({ status: 'sent', leased: false, last_error: null });
  expect(smtp.to(customer)).toHaveLength(1);
});

it('slow on every step, the deadline passes after the message went out → failed in doubt, recorded by the worker, not resent', async () => {
  const customer = `doubt-${unique()}@example.com`;
  // Five replies at 0.3 T: the message goes out at about 1.5 T; the server then holds its answer until the
  // attempt is recorded, so the deadline (2 T, within the per-step timeout of the wait) decides.
  link.replyDelayMs = 0.3 * T;
  let id = '';
  smtp.beforeAccept = async (mail) => {
    if (mail.to.includes(customer)) await waitFor(async () => (await attempts(id)).some((a) => a.outcome !== 'sending'), 20000);
  };
  const m = await receiptFor(customer);
  id = m.id;
  await relay(m.id);
  const done = (await waitFor(async () => {
    const r = await row(m.id);
    return r.status !== 'pending' ? r : null;
  }, 20000))!;
  expect(done).toMatchObject({ status: 'failed', attempts: 1, leased: false });
  expect(done.last_error).toMatch(/in doubt/);
  expect(done.last_error).toMatch(/deadline/);
  const log = await attempts(m.id);
  expect(log).toEqual([{ attempt: 1, outcome: 'in_doubt', error: expect.stringMatching(/deadline/) }]);
  expect(smtp.to(customer)).toHaveLength(1);
});

it('a message that cannot be built → nothing claimed (no lease, no attempt), BullMQ retries it; sent once it can be built', async () => {
  const customer = `unbuildable-${unique()}@example.com`;
  const m = await receiptFor(customer);
  // Not a currency Intl knows: rendering the amounts throws.
  await sql(`UPDATE payment_requests SET fiat_currency = 'zz' WHERE id = $1`, [m.requestId]);
  await relay(m.id);
  const queue = svc.app.get(NotificationQueue).raw;
  const job = (await waitFor(async () => {
    const j = await queue.getJob(notificationJobId(m.id, 1));
    return j && j.attemptsMade >= 1 ? j : null;
  }, 20000))!;
  expect(job.failedReason).toMatch(/currency/i);
  expect(await row(m.id)).toMatchObject({ status: 'pending', attempts: 0, leased: false });
  expect(await attempts(m.id)).toEqual([]);

  await sql(`UPDATE payment_requests SET fiat_currency = 'usd' WHERE id = $1`, [m.requestId]);
  await waitFor(async () => (await row(m.id)).status === 'sent', 20000);
  expect((await attempts(m.id)).map((a) => a.outcome)).toEqual(['sent']);
  expect(smtp.to(customer)).toHaveLength(1);
});
