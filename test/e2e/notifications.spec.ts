import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { DEV_KEYS, mint, transferToken } from '../../scripts/chain/local-node';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { signInDashboard } from '../factories/dashboard';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Issue 13 end to end: a merchant creates a request with the customer's email on its dashboard, the payer
 * pays it on the local chain, and the receipt and the merchant's note arrive at a real SMTP server; the
 * dashboard's request detail shows what was sent to whom and when.
 */
let smtp: SmtpCatcher;
let svc: TestService;

beforeAll(async () => {
  smtp = await SmtpCatcher.start();
  svc = await startService({ worker: true, env: { SMTP_URL: smtp.url, MAIL_FROM: 'Receipts <receipts@shop.example.test>', VERIFY_POLL_MS: '200' } });
  const env = testEnv();
  await mint(env.rpcUrl, env.token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
}, 60000);

afterAll(async () => {
  await svc?.close();
  await smtp?.down();
});

it('pay a dashboard request with customer_email → receipt and merchant note over SMTP, shown in the request detail', async () => {
  const p = await createPartner(svc);
  const owner = `owner-${randomBytes(3).toString('hex')}@example.com`;
  const m = await createOnboardedMerchant(svc, p.testKey, { display_name: 'Corner Café', email: owner });
  const dash = await signInDashboard(svc, m.wallet);
  const me = await dash.call('GET', '/me');
  expect(me.body).toMatchObject({ email_enabled: true, sms_enabled: false });

  const customer = `customer-${randomBytes(3).toString('hex')}@example.com`;
  const created = await dash.call('POST', '/requests', { body: { fiat_amount_int: 1250, customer_email: customer, customer_phone: '+15551234567' } });
  expect(created.status).toBe(201);
  const id = created.body.request_id as string;
  const before = await dash.call('GET', `/requests/${id}`);
  expect(before.body.notifications).toEqual([]);

  const env = testEnv();
  const tx = await transferToken(env.rpcUrl, env.token, DEV_KEYS[1], m.wallet.address, BigInt(created.body.amount));
  const proof = await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: tx.txHash } });
  expect(proof.status).toBe(200);

  const receipt = (await waitFor(async () => smtp.to(customer)[0], 30000))!;
  const note = (await waitFor(async () => smtp.to(owner)[0], 30000))!;
  expect(receipt.subject).toBe('[test] Receipt: $12.50 paid to Corner Café');
  expect(receipt.text).toContain(tx.txHash);
  expect(receipt.text).toContain(id);
  expect(receipt.text).toContain('12.5 TUSD');
  expect(receipt.from).toBe('receipts@shop.example.test');
  expect(note.subject).toBe('[test] Payment received: $12.50');
  expect(note.text).toContain(id);

  // SMS is off (no SMS_* configured): no SMS row, though the request has a phone number.
  const detail = await waitFor(async () => {
    const d = await dash.call('GET', `/requests/${id}`);
    return d.body.notifications.length === 2 && d.body.notifications.every((n: any) => n.status === 'sent') && d.body;
  });
  expect(detail.notifications.map((n: any) => ({ ...n, sent_at: typeof n.sent_at }))).toEqual([
    { kind: 'merchant_note', channel: 'email', to: owner, status: 'sent', sent_at: 'string' },
    { kind: 'receipt', channel: 'email', to: customer, status: 'sent', sent_at: 'string' },
  ]);
  for (const n of detail.notifications) expect(n.sent_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(smtp.to(customer)).toHaveLength(1);
  expect(smtp.to(owner)).toHaveLength(1);
});

it("a plan's charge → a charge notice to the payer with the pay link and the due time, once per charge", async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey, { display_name: 'Yoga <Studio>' });
  const dash = await signInDashboard(svc, m.wallet);
  const payer = `payer-${randomBytes(3).toString('hex')}@example.com`;
  const plan = await dash.call('POST', '/plans', {
    body: { title: 'Monthly class', fiat_amount_int: 3000, interval: 'month', payer_name: 'Ana', payer_email: payer },
  });
  expect(plan.status).toBe(201);
  // start_at defaults to now: period 0 is charged when the plan is made.
  const [charge] = (await waitFor(async () => {
    const d = await dash.call('GET', `/plans/${plan.body.plan_id}`);
    return d.body.charges.length === 1 && d.body.charges;
  }, 20000))!;

  const notice = (await waitFor(async () => smtp.to(payer)[0], 30000))!;
  expect(notice.subject).toContain('[test]');
  expect(notice.text).toContain(`/pay/${charge.request_id}`);
  expect(notice.text).toContain('$30.00');
  expect(notice.html).toContain('Yoga &lt;Studio&gt;');
  expect(notice.html).not.toContain('Yoga <Studio>');

  const detail = await waitFor(async () => {
    const d = await dash.call('GET', `/requests/${charge.request_id}`);
    return d.body.notifications.length === 1 && d.body.notifications[0].status === 'sent' && d.body;
  });
  expect(detail.notifications[0]).toMatchObject({ kind: 'charge_notice', channel: 'email', to: payer, status: 'sent' });
  expect(smtp.to(payer)).toHaveLength(1);
});
