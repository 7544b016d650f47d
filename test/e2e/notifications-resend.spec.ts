import { randomBytes, randomUUID } from 'node:crypto';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { verifiedReceipt } from '../factories/notifications';
import { admin } from '../factories/partners';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * An operator sends again a notification that did not go out: POST /admin/api/notifications/:id/resend.
 * Real SMTP server and worker: the receipt is refused (or the message abandoned), the operator resends it,
 * and it arrives once, under its Message-ID, with every attempt kept and the resend in the audit trail.
 * A pending or sent message is never resent; one whose last attempt was in doubt only with allow_duplicate.
 */
let smtp: SmtpCatcher;
let svc: TestService;
/** What the SMTP server answers at RCPT TO, by address (absent: accepted). */
const rcpt = new Map<string, number>();

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  smtp.rcptRule = (to) => rcpt.get(to) ?? null;
  svc = await startService({
    worker: true,
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'receipts@mail.example.test',
      NOTIFY_RETRY_BASE_MS: '100',
      NOTIFY_REDRIVE_MS: '500',
      REDIS_PREFIX: `${testEnv().redisPrefix}-ntresend`,
    },
  });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await smtp?.down();
  await closeSql();
});

interface Receipt {
  id: string;
  customer: string;
  requestId: string;
  partnerId: string;
}

/** A receipt of a verified request, relayed, which the SMTP server refuses for good (550): failed after attempt 1. */
async function refusedReceipt(): Promise<Receipt> {
  const customer = `resend-${randomBytes(4).toString('hex')}@example.com`;
  rcpt.set(customer, 550);
  const r = await verifiedReceipt(svc, customer);
  await svc.app.get(NotificationRelay).enqueue([r.id]);
  await waitFor(async () => (await row(r.id)).status === 'failed', 20000);
  return { ...r, customer };
}

async function row(id: string) {
  const [x] = await sql(`SELECT status, attempts, resent_at, last_error, sent_at FROM notifications WHERE id = $1`, [id]);
  return x;
}

const attempts = (id: string) => sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`, [id]);
const auditRows = (id: string) =>
  sql(`SELECT actor_kind, client_address, partner_id, details FROM audit_events WHERE action = 'notification.resent' AND target_id = $1`, [id]);

it('a refused receipt, resent once its address works: one mail under its Message-ID, both attempts kept, audited', async () => {
  const n = await refusedReceipt();
  expect(await attempts(n.id)).toEqual([{ attempt: 1, outcome: 'failed' }]);
  expect(smtp.to(n.customer)).toHaveLength(0);

  rcpt.delete(n.customer);
  const resent = await admin(svc, 'POST', `/notifications/${n.id}/resend`);
  expect(resent.status).toBe(200);
  expect(resent.body).toMatchObject({ ok: true, notification_id: n.id, status: 'pending', attempts: 1, request_id: n.requestId, to: n.customer });
  expect(resent.body.resent_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  const mail = (await waitFor(async () => smtp.to(n.customer)[0], 20000))!;
  expect(mail.messageId).toBe(`<${n.id}@mail.example.test>`);
  await waitFor(async () => (await row(n.id)).status === 'sent');
  expect(await attempts(n.id)).toEqual([{ attempt: 1, outcome: 'failed' }, { attempt: 2, outcome: 'sent' }]);
  expect(await auditRows(n.id)).toEqual([{
    actor_kind: 'admin', client_address: expect.any(String), partner_id: n.partnerId,
    details: { kind: 'receipt', channel: 'email', request_id: n.requestId, previous_status: 'failed', last_outcome: 'failed', attempts_before: 1, allow_duplicate: false },
  }]);

  // Sent: never again (at most once), and the refusal changes nothing.
  const again = await admin(svc, 'POST', `/notifications/${n.id}/resend`, { allow_duplicate: true });
  expect(again.status).toBe(409);
  expect(again.body).toMatchObject({ ok: false, error: 'conflict' });
  expect(JSON.stringify(again.body)).toContain('was sent');
  expect(await auditRows(n.id)).toHaveLength(1);
  expect(smtp.to(n.customer)).toHaveLength(1);

  const listed = await admin(svc, 'GET', `/notifications?status=sent&request_id=${n.requestId}`);
  expect(listed.body.notifications).toEqual([expect.objectContaining({ notification_id: n.id, status: 'sent', resent_at: resent.body.resent_at })]);
}, 60000);

it('ten resends at once: one reopens the message, nine get 409; one mail, one audit row', async () => {
  const n = await refusedReceipt();
  rcpt.delete(n.customer);
  const replies = await Promise.all(Array.from({ length: 10 }, () => admin(svc, 'POST', `/notifications/${n.id}/resend`)));
  expect(replies.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(409)]);
  await waitFor(async () => (await row(n.id)).status === 'sent', 20000);
  expect(await attempts(n.id)).toEqual([{ attempt: 1, outcome: 'failed' }, { attempt: 2, outcome: 'sent' }]);
  expect(await auditRows(n.id)).toHaveLength(1);
  // Sent, with no attempt pending: no job can claim it again (a claim takes only a pending message).
  expect(smtp.to(n.customer)).toHaveLength(1);
}, 60000);

it('last attempt in doubt: refused without allow_duplicate (nothing changes), sent with it', async () => {
  const n = await refusedReceipt();
  // As the re-drive leaves a message whose worker stopped mid-send (notifications-crash.spec makes one for real).
  await sql(`UPDATE notification_attempts SET outcome = 'in_doubt' WHERE notification_id = $1`, [n.id]);
  rcpt.delete(n.customer);
  const before = await row(n.id);

  for (const body of [undefined, {}, { allow_duplicate: false }]) {
    const refused = await admin(svc, 'POST', `/notifications/${n.id}/resend`, body);
    expect(refused.status).toBe(409);
    expect(refused.body.errors).toEqual([{ field: 'notification_id', message: expect.stringMatching(/may have reached the recipient.*allow_duplicate: true/) }]);
  }
  expect(await row(n.id)).toEqual(before);
  expect(await auditRows(n.id)).toEqual([]);

  const resent = await admin(svc, 'POST', `/notifications/${n.id}/resend`, { allow_duplicate: true });
  expect(resent.status).toBe(200);
  await waitFor(async () => smtp.to(n.customer).length === 1, 20000);
  await waitFor(async () => (await row(n.id)).status === 'sent');
  expect((await auditRows(n.id))[0].details).toMatchObject({ previous_status: 'failed', last_outcome: 'in_doubt' });
}, 60000);

it('an abandoned two-day-old message gets a schedule of its own: a transient failure after the resend is retried, not abandoned', async () => {
  const n = await refusedReceipt();
  // Abandoned long ago: past the 24 hours counted from its creation.
  await sql(`UPDATE notifications SET status = 'abandoned', created_at = now() - interval '2 days' WHERE id = $1`, [n.id]);
  rcpt.set(n.customer, 451);

  const resent = await admin(svc, 'POST', `/notifications/${n.id}/resend`);
  expect(resent.status).toBe(200);
  expect(resent.body).toMatchObject({ status: 'pending', attempts: 1 });
  // Attempt 2 meets a 451: from the resend the message is young, so it waits for attempt 3.
  await waitFor(async () => (await attempts(n.id)).some((a: { attempt: number; outcome: string }) => a.attempt === 2 && a.outcome !== 'sending'), 20000);
  expect((await attempts(n.id))[1]).toEqual({ attempt: 2, outcome: 'retry' });
  expect((await row(n.id)).status).toBe('pending');

  rcpt.delete(n.customer);
  await waitFor(async () => (await row(n.id)).status === 'sent', 20000);
  expect(smtp.to(n.customer)).toHaveLength(1);
  expect((await auditRows(n.id))[0].details).toMatchObject({ previous_status: 'abandoned' });
}, 60000);

it('a receipt whose payment finality lost to a reorg (the request stays verified) is not resent: 409, nothing changes', async () => {
  const n = await refusedReceipt();
  rcpt.delete(n.customer);
  // As finality leaves it (finality.spec reorgs a payment away for real): verified, with its claim lost.
  await sql(`UPDATE payment_requests SET claim_lost_at = now() WHERE id = $1`, [n.requestId]);
  const before = await row(n.id);
  const r = await admin(svc, 'POST', `/notifications/${n.id}/resend`, { allow_duplicate: true });
  expect(r.status).toBe(409);
  expect(r.body.errors).toEqual([{ field: 'notification_id', message: expect.stringMatching(/lost to a reorg/) }]);
  expect(await row(n.id)).toEqual(before);
  expect(await auditRows(n.id)).toEqual([]);
  expect(smtp.to(n.customer)).toHaveLength(0);
}, 60000);

it('the sender too: a receipt retried after its payment was lost to a reorg is abandoned unsent', async () => {
  const customer = `lost-${randomBytes(4).toString('hex')}@example.com`;
  rcpt.set(customer, 451);
  const r = await verifiedReceipt(svc, customer);
  await svc.app.get(NotificationRelay).enqueue([r.id]);
  await waitFor(async () => (await attempts(r.id)).some((a: { outcome: string }) => a.outcome === 'retry'), 20000);
  await sql(`UPDATE payment_requests SET claim_lost_at = now() WHERE id = $1`, [r.requestId]);
  rcpt.delete(customer);
  await waitFor(async () => (await row(r.id)).status === 'abandoned', 20000);
  expect((await row(r.id)).last_error).toMatch(/^not sent: the payment was lost to a reorg/);
  expect((await attempts(r.id)).map((a: { outcome: string }) => a.outcome)).toEqual(['retry', 'abandoned']);
  expect(smtp.to(customer)).toHaveLength(0);
}, 60000);

it('bad calls change nothing: 404 unknown or malformed id, 400 bad body, 401 without the token, 409 while pending', async () => {
  const n = await refusedReceipt();
  const before = await row(n.id);

  // A malformed id is the same not_found as an unknown one (UuidParamPipe).
  expect(await admin(svc, 'POST', '/notifications/not-a-uuid/resend')).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } });
  const unknown = await admin(svc, 'POST', `/notifications/${randomUUID()}/resend`);
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ ok: false, error: 'not_found' });
  for (const body of [{ allow_duplicate: 'yes' }, { allow_duplicate: 1 }, { allow_duplicate: true, status: 'pending' }]) {
    const bad = await admin(svc, 'POST', `/notifications/${n.id}/resend`, body);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ok: false, error: 'invalid_request' });
  }
  const raw = await call(svc.adminUrl, 'POST', `/admin/api/notifications/${n.id}/resend`, { key: ADMIN_TOKEN, raw: '{"allow_duplicate":', headers: { 'content-type': 'application/json' } });
  expect(raw.status).toBe(400);
  expect((await call(svc.adminUrl, 'POST', `/admin/api/notifications/${n.id}/resend`)).status).toBe(401);
  expect((await call(svc.adminUrl, 'POST', `/admin/api/notifications/${n.id}/resend`, { key: 'wrong-token' })).status).toBe(401);
  // The public listener has no admin routes.
  expect((await call(svc.publicUrl, 'POST', `/admin/api/notifications/${n.id}/resend`, { key: ADMIN_TOKEN })).status).toBe(404);
  expect(await row(n.id)).toEqual(before);
  expect(await auditRows(n.id)).toEqual([]);

  // Pending (held back by a 451 with a long wait): still being sent, so not resent.
  await sql(`UPDATE notifications SET status = 'pending', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [n.id]);
  const pending = await admin(svc, 'POST', `/notifications/${n.id}/resend`, { allow_duplicate: true });
  expect(pending.status).toBe(409);
  expect(pending.body.errors[0].message).toMatch(/still being sent/);
  expect(await auditRows(n.id)).toEqual([]);
}, 60000);
