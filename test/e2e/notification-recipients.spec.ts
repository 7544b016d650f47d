import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { DataSource } from 'typeorm';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { signInDashboard } from '../factories/dashboard';
import { markVerified } from '../factories/notifications';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * A receipt goes to the one address the request names, never to others. nodemailer reads its `to` as an
 * address list: "a@x, b@y" is two recipients, and "a@x\r\nBcc: c@z" is c@z alone. Anyone can create a handle
 * request (no sign-in) and pay it with test tokens, so an unchecked customer_email made the service send its
 * receipts, in the merchant's name, to any list of addresses.
 */
let smtp: SmtpCatcher;
let svc: TestService;

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  svc = await startService({
    worker: true,
    env: {
      SMTP_URL: smtp.url, MAIL_FROM: 'Receipts <receipts@shop.example.test>', VERIFY_POLL_MS: '200', NOTIFY_REDRIVE_MS: '300',
      NOTIFY_RETRY_BASE_MS: '200', NOTIFY_RETRY_MAX_MS: '1000',
    },
  });
  await mint(testEnv().rpcUrl, testEnv().token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
}, 60000);

afterAll(async () => {
  await svc?.close();
  await smtp?.down();
  await closeSql();
});

const tag = () => randomBytes(3).toString('hex');

it('handle, dashboard and plan creates refuse an email that is not one address: 400 invalid_request, nothing made', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const dash = await signInDashboard(svc, m.wallet);
  const handle = `shop-${tag()}`;
  expect((await dash.call('PUT', '/handle', { body: { handle } })).status).toBe(200);
  const victim = `victim-${tag()}@example.com`;
  for (const email of [`payer@example.com, ${victim}`, `payer@example.com\r\nBcc: ${victim}`, `Payer <payer@example.com>`, 'not an email']) {
    const viaHandle = await call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body: { fiat_amount_int: 100, customer_email: email } });
    expect(viaHandle.status).toBe(400);
    expect(viaHandle.body).toMatchObject({ ok: false, error: 'invalid_request', errors: [{ field: 'customer_email' }] });
    const viaDashboard = await dash.call('POST', '/requests', { body: { fiat_amount_int: 100, customer_email: email } });
    expect(viaDashboard.status).toBe(400);
    expect(viaDashboard.body).toMatchObject({ ok: false, error: 'invalid_request', errors: [{ field: 'customer_email' }] });
    const plan = await dash.call('POST', '/plans', { body: { title: 'Weekly', fiat_amount_int: 100, interval: 'week', payer_email: email } });
    expect(plan.status).toBe(400);
    expect(plan.body).toMatchObject({ ok: false, error: 'invalid_request', errors: [{ field: 'payer_email' }] });
  }
  expect((await dash.call('GET', '/requests')).body.requests).toEqual([]);
  expect((await dash.call('GET', '/plans')).body.plans).toEqual([]);
});

it("a partner's customer_email that names several addresses (spec: any string ≤ 254): its receipt fails where the merchant sees it; nobody in it is mailed", async () => {
  const p = await createPartner(svc);
  const owner = `owner-${tag()}@example.com`;
  const m = await createOnboardedMerchant(svc, p.testKey, { email: owner });
  const payer = `payer-${tag()}@example.com`;
  const victim = `victim-${tag()}@example.com`;
  const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 700, customer_email: `${payer}\r\nBcc: ${victim}` });
  const tx = await transferToken(testEnv().rpcUrl, testEnv().token, DEV_KEYS[1], m.wallet.address, BigInt(r.amount));
  expect((await call(svc.publicUrl, 'POST', `/pay/api/${r.request_id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);

  // The merchant's note is written in the same transaction as a receipt would be: once it is mailed, so would the receipt.
  await waitFor(async () => smtp.to(owner)[0], 30000);
  const dash = await signInDashboard(svc, m.wallet);
  const detail = await waitFor(async () => {
    const d = await dash.call('GET', `/requests/${r.request_id}`);
    return d.body.notifications.every((n: any) => n.status !== 'pending') && d.body;
  });
  expect(smtp.to(victim)).toEqual([]);
  expect(smtp.to(payer)).toEqual([]);
  expect(detail.notifications.map((n: any) => [n.kind, n.status]).sort()).toEqual([
    ['merchant_note', 'sent'],
    ['receipt', 'failed'],
  ]);
  const [receipt] = await sql(`SELECT "to", attempts, last_error FROM notifications WHERE request_id = $1 AND kind = 'receipt'`, [r.request_id]);
  expect(receipt).toEqual({ to: `${payer}\r\nBcc: ${victim}`, attempts: 1, last_error: 'the recipient is not one email address' });
});

it('a receipt row stored before the outbox checked its recipient is refused by the sender (failed), never mailed', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const victim = `victim-${tag()}@example.com`;
  const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 800 });
  await svc.app.get(DataSource).transaction((em) => markVerified(em, r.request_id));
  // As an older release wrote it: the re-drive finds it pending with no job and queues it.
  const [row] = await sql(
    `INSERT INTO notifications (id, kind, channel, "to", request_id, message_id)
     VALUES (gen_random_uuid(), 'receipt', 'email', $1, $2, '<' || gen_random_uuid() || '@shop.example.test>') RETURNING id`,
    [`payer@example.com, ${victim}`, r.request_id],
  );
  const done = await waitFor(async () => {
    const [n] = await sql(`SELECT status, last_error FROM notifications WHERE id = $1`, [row.id]);
    return n.status !== 'pending' && n;
  }, 30000);
  expect(done).toEqual({ status: 'failed', last_error: 'the recipient is not one email address' });
  expect(smtp.to(victim)).toEqual([]);
});

describe("the merchant's note goes to the merchant's email as it is at each attempt (a helper's hunt)", () => {
  /** A dashboard request paid on the chain while the merchant's old mailbox answers 451: the note is retried. */
  async function noteBeingRetried(oldOwner: string) {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey, { email: oldOwner });
    const dash = await signInDashboard(svc, m.wallet);
    smtp.rcptRule = (to) => (to === oldOwner ? 451 : null);
    const created = await dash.call('POST', '/requests', { body: { fiat_amount_int: 1717 } });
    expect(created.status).toBe(201);
    const id: string = created.body.request_id;
    const tx = await transferToken(testEnv().rpcUrl, testEnv().token, DEV_KEYS[1], m.wallet.address, BigInt(created.body.amount));
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
    await waitFor(async () => (await sql(
      `SELECT 1 FROM notification_attempts a JOIN notifications n ON n.id = a.notification_id
        WHERE n.request_id = $1 AND n.kind = 'merchant_note' AND a.outcome = 'retry'`, [id])).length > 0, 30000);
    return { dash, id };
  }
  const noteOf = async (id: string) => (await waitFor(async () => {
    const [n] = await sql(`SELECT "to", status, last_error FROM notifications WHERE request_id = $1 AND kind = 'merchant_note'`, [id]);
    return n && n.status !== 'pending' && n;
  }, 30000));

  afterEach(() => {
    smtp.rcptRule = () => null;
  });

  it('changed while the note was retried: sent to the new address, never to the old one (it may be a former employee\'s)', async () => {
    const oldOwner = `old-owner-${tag()}@example.com`;
    const newOwner = `new-owner-${tag()}@example.com`;
    const { dash, id } = await noteBeingRetried(oldOwner);
    expect((await dash.call('PATCH', '/me', { body: { email: newOwner } })).status).toBe(200);
    expect(await noteOf(id)).toEqual({ to: newOwner, status: 'sent', last_error: null });
    // Each attempt keeps where it went: the old address until the change, the new one after.
    const attempts = await sql(
      `SELECT a."to", a.outcome FROM notification_attempts a JOIN notifications n ON n.id = a.notification_id
        WHERE n.request_id = $1 AND n.kind = 'merchant_note' ORDER BY a.attempt`, [id]);
    expect(attempts[0]).toEqual({ to: oldOwner, outcome: 'retry' });
    expect(attempts[attempts.length - 1]).toEqual({ to: newOwner, outcome: 'sent' });
    expect(smtp.to(newOwner)).toHaveLength(1);
    expect(smtp.to(oldOwner)).toEqual([]);
    expect((await dash.call('GET', `/requests/${id}`)).body.notifications).toEqual(
      expect.arrayContaining([expect.objectContaining({ kind: 'merchant_note', to: newOwner, status: 'sent' })]));
  });

  it('removed while the note was retried: abandoned unsent, and an operator\'s resend is refused', async () => {
    const oldOwner = `gone-owner-${tag()}@example.com`;
    const { dash, id } = await noteBeingRetried(oldOwner);
    expect((await dash.call('PATCH', '/me', { body: { email: null } })).status).toBe(200);
    expect(await noteOf(id)).toEqual({ to: oldOwner, status: 'abandoned', last_error: 'not sent: the merchant has no email address any more' });
    expect(smtp.to(oldOwner)).toEqual([]);
    const [{ id: noteId }] = await sql(`SELECT id FROM notifications WHERE request_id = $1 AND kind = 'merchant_note'`, [id]);
    const resend = await call(svc.adminUrl, 'POST', `/admin/api/notifications/${noteId}/resend`, { key: ADMIN_TOKEN });
    expect(resend.status).toBe(409);
    expect(resend.body).toMatchObject({ ok: false, error: 'conflict', errors: [{ field: 'notification_id', message: 'the merchant has no email address any more' }] });
  });

  it('a merchant email stored before the merchant APIs checked for one address: its note is written and fails where the merchant sees it', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const quoted = `"owner.${tag()}"@example.com`;
    await sql(`UPDATE merchants SET email = $2 WHERE id = $1`, [m.id, quoted]);
    const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 1723 });
    const tx = await transferToken(testEnv().rpcUrl, testEnv().token, DEV_KEYS[1], m.wallet.address, BigInt(r.amount));
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${r.request_id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
    expect(await noteOf(r.request_id)).toEqual({ to: quoted, status: 'failed', last_error: 'the recipient is not one email address' });
    expect(smtp.to(quoted)).toEqual([]);
  });
});
