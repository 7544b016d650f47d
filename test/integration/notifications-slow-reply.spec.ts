import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { NotificationsOutbox } from '../../src/modules/notifications/notifications-outbox';
import { markVerified } from '../factories/notifications';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';

/*
 * DESIGN §6: at most one message per (request, kind). An SMTP server that took the whole message but answers
 * its 250 later than NOTIFY_SEND_TIMEOUT_MS (content scanning, a lost reply: RFC 5321 §4.5.3.2.6 gives the
 * final reply 10 minutes) has the message; the mailer only knows it timed out. Sending it again is a second
 * receipt: such an attempt is in doubt, like a worker that died mid-send (notifications-crash.spec.ts).
 * A failure before the message was handed over (refused RCPT, server down) is still retried.
 */
let smtp: SmtpCatcher;
let svc: TestService;
let partnerKey: string;
let merchantId: string;

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  svc = await startService({
    worker: true,
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'receipts@mail.example.test',
      NOTIFY_SEND_TIMEOUT_MS: '1000',
      NOTIFY_RETRY_BASE_MS: '100',
      NOTIFY_RETRY_MAX_MS: '1000',
      NOTIFY_GIVE_UP_MS: '60000',
      NOTIFY_REDRIVE_MS: '500',
    },
  });
  const p = await createPartner(svc);
  partnerKey = p.testKey;
  merchantId = (await createOnboardedMerchant(svc, p.testKey)).id;
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await smtp?.down();
});

let fiat = 2000;

async function receiptFor(customer: string): Promise<{ requestId: string; id: string }> {
  const r = await mustCreateRequest(svc, partnerKey, { account_id: merchantId, fiat_amount_int: (fiat += 7) });
  const ids = await svc.app.get(DataSource).transaction(async (em) => {
    await markVerified(em, r.request_id);
    return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId: r.request_id, merchantId, customerEmail: customer, customerPhone: null });
  });
  await svc.app.get(NotificationRelay).enqueue(ids);
  return { requestId: r.request_id, id: ids[0] };
}

const row = async (id: string) =>
  (await sql<{ status: string; last_error: string | null }>(`SELECT status, last_error FROM notifications WHERE id = $1`, [id]))[0];
/** The message once it ended: failed (in doubt) or sent. */
const finalRow = async (id: string) =>
  (await waitFor(async () => {
    const x = await row(id);
    return x.status === 'failed' || x.status === 'sent' ? x : null;
  }, 20000))!;
const outcomes = async (id: string) =>
  (await sql<{ outcome: string }>(`SELECT outcome FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`, [id])).map((a) => a.outcome);

it('the 250 for a message the server took arrives after the send timeout → sent once, failed in doubt, not retried', async () => {
  const customer = `slow-${randomBytes(3).toString('hex')}@example.com`;
  let id: string | undefined;
  smtp.beforeAccept = async (mail) => {
    // The server has the message and holds its 250 until the service has given up waiting for it (its send
    // timeout) and recorded the outcome.
    if (mail.to.includes(customer) && smtp.to(customer).length === 1) {
      await waitFor(async () => id !== undefined && (await row(id)).status !== 'pending', 20000);
    }
  };
  try {
    ({ id } = await receiptFor(customer));
    // Final either way: failed in doubt, or sent by a retry (100 ms of back-off) that the server took again.
    const r = await finalRow(id);
    expect(smtp.to(customer)).toHaveLength(1);
    expect(r.status).toBe('failed');
    expect(r.last_error).toMatch(/in doubt/);
    expect(await outcomes(id)).toEqual(['in_doubt']);
  } finally {
    smtp.beforeAccept = () => undefined;
  }
}, 40000);

// A 4xx answer to the message itself (after DATA) says the server did not take it (greylisting, a filter's soft
// reject): nothing is in doubt, and it is retried like a 451 at RCPT.
it.each([
  ['a failure before the message was handed over (451 at RCPT)', 'rcptRule'],
  ['a 4xx answer to the message itself (451 after DATA: the server did not take it)', 'dataRule'],
] as const)('%s is retried, not in doubt, and sent once', async (_what, rule) => {
  const customer = `busy-${randomBytes(3).toString('hex')}@example.com`;
  let refusals = 0;
  smtp[rule] = (to) => (to === customer && refusals++ < 1 ? 451 : null);
  try {
    const { id } = await receiptFor(customer);
    expect(await finalRow(id)).toMatchObject({ status: 'sent' });
    expect(refusals).toBeGreaterThanOrEqual(1);
    expect(await outcomes(id)).toEqual(['retry', 'sent']);
    expect(smtp.to(customer)).toHaveLength(1);
  } finally {
    smtp[rule] = () => null;
  }
}, 40000);
