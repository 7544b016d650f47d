import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { WebhookSettingsService } from '../../src/modules/webhooks/webhook-settings.service';
import { verifyWebhook, WebhookVerificationError } from '../../sdk/webhook-verify/src/index';
import { admin, createOnboardedMerchant, createPartner } from '../factories/partners';
import { recordProofEvent } from '../factories/events';
import { mustCreateRequest } from '../factories/requests';
import { startService, testConfig, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { Receiver } from '../support/receiver';
import { openStoredSecret } from '../support/secrets';

/*
 * Webhook secrets at rest (issue 10 point 6, DESIGN §7): webhook_endpoints holds sealed values only; a
 * delivery is still signed with the secret the partner was shown (checked with the SDK); rotation still
 * works; and after a SECRET_KEY rotation (old key in SECRET_KEY_PREVIOUS) the service still signs, sealing
 * what it reads again under the new key.
 */
let svc: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  svc = await startService({ worker: true, env: { WEBHOOK_TIMEOUT_MS: '3000' } });
});
afterAll(async () => {
  await svc?.close();
  await Promise.all(receivers.map((r) => r.close()));
  await closeSql();
});

async function receiver(): Promise<Receiver> {
  const r = await Receiver.start();
  receivers.push(r);
  return r;
}

async function stored(partnerId: string): Promise<{ secret: string | null; previous_secret: string | null }> {
  const [row] = await sql(`SELECT secret, previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [partnerId]);
  return row;
}

/** A partner with webhooks on (set through `on`'s admin API) and a request its events can report. */
async function shop(on: TestService) {
  const partner = await createPartner(on);
  const m = await createOnboardedMerchant(on, partner.testKey);
  const r = await receiver();
  const put = await admin(on, 'PUT', `/partners/${partner.id}/webhook`, { url: r.url, enabled: true });
  expect(put.status).toBe(200);
  const request = await mustCreateRequest(on, partner.testKey, { account_id: m.id, fiat_amount_int: 2500 });
  return { partnerId: partner.id, secret: put.body.secret as string, receiver: r, requestId: request.request_id as string };
}

async function deliveredOnce(on: TestService, s: { partnerId: string; requestId: string; receiver: Receiver }) {
  const ev = await recordProofEvent(on, { partnerId: s.partnerId, requestId: s.requestId });
  const [call] = (await s.receiver.waitUntil((c) => c.some((x) => x.headers['x-service-delivery'] === ev.id))).filter(
    (x) => x.headers['x-service-delivery'] === ev.id,
  );
  return call;
}

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

it('stores the secret sealed; deliveries verify with the SDK against the secret shown once', async () => {
  const s = await shop(svc);
  const row = await stored(s.partnerId);
  expect(row.previous_secret).toBeNull();
  // Neither the secret, nor its bytes, nor its base64 are in the column.
  for (const form of [s.secret, hex(s.secret), Buffer.from(s.secret, 'hex').toString('base64'), Buffer.from(s.secret).toString('base64')]) {
    expect(row.secret).not.toContain(form);
  }
  expect(row.secret).toMatch(/^enc:v1:[0-9a-f]{8}:/);
  expect(openStoredSecret(s.partnerId, row.secret!)).toBe(s.secret);
  // Bound to its partner: the same value copied to another partner's row does not open there.
  expect(() => openStoredSecret(randomBytes(16).toString('hex'), row.secret!)).toThrow();

  const call = await deliveredOnce(svc, s);
  const event = verifyWebhook(call.rawBody, String(call.headers['x-service-signature']), s.secret);
  expect(event).toMatchObject({ event: 'payment.proof_attached', partner_id: s.partnerId, request_id: s.requestId });
  // Not signed with the stored value.
  expect(() => verifyWebhook(call.rawBody, String(call.headers['x-service-signature']), row.secret!)).toThrow(WebhookVerificationError);
});

it('rotation: both sealed, both sign until confirmed, then the new one alone', async () => {
  const s = await shop(svc);
  const rotated = await admin(svc, 'POST', `/partners/${s.partnerId}/webhook/rotate`);
  expect(rotated.status).toBe(200);
  const newSecret = rotated.body.secret as string;
  const row = await stored(s.partnerId);
  expect(row.secret).not.toContain(newSecret);
  expect(row.previous_secret).not.toContain(s.secret);
  expect(openStoredSecret(s.partnerId, row.secret!)).toBe(newSecret);
  expect(openStoredSecret(s.partnerId, row.previous_secret!)).toBe(s.secret);

  const during = await deliveredOnce(svc, s);
  const header = String(during.headers['x-service-signature']);
  expect(header.match(/v1=/g)).toHaveLength(2);
  expect(verifyWebhook(during.rawBody, header, s.secret)).toMatchObject({ request_id: s.requestId });
  expect(verifyWebhook(during.rawBody, header, newSecret)).toMatchObject({ request_id: s.requestId });

  expect((await admin(svc, 'POST', `/partners/${s.partnerId}/webhook/confirm-rotation`)).status).toBe(200);
  const after = await deliveredOnce(svc, s);
  const afterHeader = String(after.headers['x-service-signature']);
  expect(afterHeader.match(/v1=/g)).toHaveLength(1);
  expect(verifyWebhook(after.rawBody, afterHeader, newSecret)).toMatchObject({ request_id: s.requestId });
  expect(() => verifyWebhook(after.rawBody, afterHeader, s.secret)).toThrow(WebhookVerificationError);
});

it('after a SECRET_KEY rotation (old key in SECRET_KEY_PREVIOUS) it still signs, and seals what it read under the new key', async () => {
  const s = await shop(svc);
  const rotated = await admin(svc, 'POST', `/partners/${s.partnerId}/webhook/rotate`);
  const newSecret = rotated.body.secret as string;
  const before = await stored(s.partnerId);

  const oldKey = testConfig().secretKey.toString('hex');
  const newKey = randomBytes(32).toString('hex');
  const rekeyed = await startService({ worker: true, env: { SECRET_KEY: newKey, SECRET_KEY_PREVIOUS: oldKey, WEBHOOK_TIMEOUT_MS: '3000' } });
  try {
    const call = await deliveredOnce(rekeyed, s);
    const header = String(call.headers['x-service-signature']);
    expect(verifyWebhook(call.rawBody, header, s.secret).partner_id).toBe(s.partnerId);
    expect(verifyWebhook(call.rawBody, header, newSecret).partner_id).toBe(s.partnerId);

    // Seen by the delivery, both values were sealed again under the new key alone.
    const after = await stored(s.partnerId);
    expect(after.secret).not.toBe(before.secret);
    expect(after.previous_secret).not.toBe(before.previous_secret);
    const newOnly = new SecretBox(Buffer.from(newKey, 'hex'));
    expect(newOnly.open(after.secret!, s.partnerId)).toBe(newSecret);
    expect(newOnly.open(after.previous_secret!, s.partnerId)).toBe(s.secret);

    // What the portal's test ping signs with, opened the same way.
    expect(await rekeyed.app.get(WebhookSettingsService).signingTarget(s.partnerId)).toEqual({ url: s.receiver.url, secrets: [newSecret, s.secret] });
  } finally {
    await rekeyed.close();
  }
});
