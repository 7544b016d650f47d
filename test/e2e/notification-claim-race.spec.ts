import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { NotificationsOutbox } from '../../src/modules/notifications/notifications-outbox';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { signInDashboard } from '../factories/dashboard';
import { markVerified } from '../factories/notifications';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * A message is sent only if what it was decided on still holds when its attempt is claimed (DESIGN §6). The
 * sender reads the request and the merchant, builds the message, then claims it; a merchant's new email or a
 * payment that commits in between must be seen. Here the gap is held open: another session holds the
 * request's row while the change commits, so the claim's transaction waits on it (as it would behind any
 * writer of the request, or on a slow database), and the change lands between the sender's read and its claim.
 * Found by a helper's hunt: the note went to the address removed, and the notice for a charge just paid went out.
 */
let smtp: SmtpCatcher;
let svc: TestService;

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  svc = await startService({
    worker: true,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Receipts <receipts@shop.example.test>', NOTIFY_REDRIVE_MS: '60000', NOTIFY_RETRY_BASE_MS: '1000', NOTIFY_RETRY_MAX_MS: '2000' },
  });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await smtp?.down();
  await closeSql();
});

const tag = () => randomBytes(3).toString('hex');

/** Sessions still holding a row: ended after each test, so a failed test leaves no lock behind. */
const holders = new Set<Client>();
afterEach(async () => {
  for (const h of holders) await h.query('ROLLBACK').then(() => h.end(), () => h.end());
  holders.clear();
});

/** A session holding the request's row, until release(): the sender's claim waits on it once it gets there. */
async function holdRequest(requestId: string, write?: (c: Client) => Promise<void>) {
  const holder = new Client({ connectionString: testEnv().databaseUrl });
  await holder.connect();
  holders.add(holder);
  await holder.query('BEGIN');
  await holder.query('SELECT id FROM payment_requests WHERE id = $1 FOR UPDATE', [requestId]);
  await write?.(holder);
  return {
    claimWaiting: () =>
      waitFor(async () => (await sql(
        // The read FOR SHARE (its text is cut at track_activity_query_size, before its FOR SHARE).
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT "PaymentRequestEntity".%' AND datname = current_database()`,
      )).length > 0, 15000, 20),
    release: async (commit = false) => {
      holders.delete(holder);
      await holder.query(commit ? 'COMMIT' : 'ROLLBACK');
      await holder.end();
    },
  };
}

async function noteOnItsWay(owner: string) {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey, { email: owner });
  const dash = await signInDashboard(svc, m.wallet);
  const created = await dash.call('POST', '/requests', { body: { fiat_amount_int: 1313 } });
  expect(created.status).toBe(201);
  const requestId: string = created.body.request_id;
  const ids = await svc.app.get(DataSource).transaction(async (em) => {
    await markVerified(em, requestId);
    return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId, merchantId: m.id, customerEmail: null, customerPhone: null });
  });
  expect(ids).toHaveLength(1);
  const held = await holdRequest(requestId);
  await svc.app.get(NotificationRelay).enqueue(ids);
  await held.claimWaiting();
  return { dash, noteId: ids[0], held };
}

const settled = (id: string) =>
  waitFor(async () => {
    const [n] = await sql(`SELECT "to", status, last_error FROM notifications WHERE id = $1`, [id]);
    return n.status !== 'pending' && n;
  }, 20000);

it('a merchant that removes its email between the read and the claim: the note is abandoned unsent', async () => {
  const owner = `gone-owner-${tag()}@example.com`;
  const { dash, noteId, held } = await noteOnItsWay(owner);
  const patched = await dash.call('PATCH', '/me', { body: { email: null } });
  expect(patched.body.email).toBeNull();
  await held.release();
  expect(await settled(noteId)).toEqual({ to: owner, status: 'abandoned', last_error: 'not sent: the merchant has no email address any more' });
  expect(smtp.to(owner)).toHaveLength(0);
});

it('a merchant that replaces its email between the read and the claim: the note goes to the new address', async () => {
  const oldOwner = `old-owner-${tag()}@example.com`;
  const newOwner = `new-owner-${tag()}@example.com`;
  const { dash, noteId, held } = await noteOnItsWay(oldOwner);
  expect((await dash.call('PATCH', '/me', { body: { email: newOwner } })).status).toBe(200);
  await held.release();
  expect(await settled(noteId)).toEqual({ to: newOwner, status: 'sent', last_error: null });
  expect({ old: smtp.to(oldOwner).length, new: smtp.to(newOwner).length }).toEqual({ old: 0, new: 1 });
  const attempts = await sql(`SELECT attempt, "to", outcome FROM notification_attempts WHERE notification_id = $1`, [noteId]);
  expect(attempts).toEqual([{ attempt: 1, to: newOwner, outcome: 'sent' }]);
});

it('a charge paid between the read and the claim of its notice: the notice is abandoned unsent', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const dash = await signInDashboard(svc, m.wallet);
  const payer = `payer-${tag()}@example.com`;
  // The payer's mailbox greylists once, so the notice waits for its second attempt.
  let refusals = 0;
  smtp.rcptRule = (to) => (to === payer && refusals++ === 0 ? 451 : null);
  const plan = await dash.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 2500, interval: 'month', payer_email: payer } });
  expect(plan.status).toBe(201);
  const [charge] = await sql(`SELECT id FROM payment_requests WHERE plan_id = $1`, [plan.body.plan_id]);
  const notice = await waitFor(async () => {
    const rows = await sql(`SELECT id FROM notifications WHERE request_id = $1 AND kind = 'charge_notice' AND attempts = 1 AND status = 'pending' AND lease_until IS NULL`, [charge.id]);
    return rows.length === 1 && rows[0];
  }, 20000, 20);
  // The payment's transaction holds the charge's row when the second attempt comes to claim, and commits.
  const held = await holdRequest(charge.id, async (c) => {
    await c.query(`UPDATE payment_requests SET proof_status = 'verified', proof_verified_at = now() WHERE id = $1`, [charge.id]);
  });
  await held.claimWaiting();
  await held.release(true);
  expect(await settled(notice.id)).toMatchObject({ status: 'abandoned', last_error: 'not sent: the charge is paid: a notice now would read as a second charge' });
  expect(smtp.to(payer)).toHaveLength(0);
});

it('a claim does not wait for long on a held row: messages whose rows nobody holds still go out, and the held ones after', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const t = tag();
  const receipts: Array<{ id: string; requestId: string; to: string }> = [];
  for (let i = 0; i < 11; i++) {
    const to = `payer-${t}-${i}@example.com`;
    const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 1000 + i, customer_email: to });
    const [id] = await svc.app.get(DataSource).transaction(async (em) => {
      await markVerified(em, r.request_id);
      return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId: r.request_id, merchantId: m.id, customerEmail: to, customerPhone: null });
    });
    receipts.push({ id, requestId: r.request_id, to });
  }
  const held = receipts.slice(0, 10);
  const free = receipts[10];
  // A long writer (an operator's open UPDATE, say) holds ten requests' rows: as many as the worker sends at once.
  const holder = new Client({ connectionString: testEnv().databaseUrl });
  await holder.connect();
  holders.add(holder);
  await holder.query('BEGIN');
  await holder.query(`SELECT id FROM payment_requests WHERE id = ANY($1::uuid[]) FOR UPDATE`, [held.map((h) => h.requestId)]);
  await svc.app.get(NotificationRelay).enqueue(held.map((h) => h.id));
  await svc.app.get(NotificationRelay).enqueue([free.id]);
  await waitFor(async () => smtp.to(free.to).length === 1, 20000);
  expect(held.filter((h) => smtp.to(h.to).length > 0)).toEqual([]);
  holders.delete(holder);
  await holder.query('ROLLBACK');
  await holder.end();
  // Their attempts were not spent: each goes out once, at its job's next try (the mail arrives before the row
  // is recorded sent: wait for the rows).
  const rows = await waitFor(async () => {
    const rs = await sql(`SELECT status, attempts FROM notifications WHERE id = ANY($1::uuid[])`, [held.map((h) => h.id)]);
    return rs.every((r) => r.status !== 'pending') && rs;
  }, 30000);
  expect(rows).toEqual(held.map(() => ({ status: 'sent', attempts: 1 })));
  expect(held.map((h) => smtp.to(h.to).length)).toEqual(held.map(() => 1));
});
