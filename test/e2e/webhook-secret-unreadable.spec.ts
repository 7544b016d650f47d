import { randomBytes } from 'node:crypto';
import { WebhookSettingsService } from '../../src/modules/webhooks/webhook-settings.service';
import { verifyWebhook } from '../../sdk/webhook-verify/src/index';
import { admin, createOnboardedMerchant, createPartner } from '../factories/partners';
import { recordProofEvent } from '../factories/events';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { Receiver } from '../support/receiver';
import { sealSecret } from '../support/secrets';
import { testEnv } from '../support/test-env';
import { sample } from '../support/metrics';
import { waitFor } from '../support/wait';
import { MetricsService } from '../../src/modules/ops/metrics.service';

/*
 * A partner whose stored webhook secret does not open here: sealed under a key this instance does not hold
 * (SECRET_KEY replaced without SECRET_KEY_PREVIOUS, or an instance still on the old key while a rolling key
 * rotation seals values under the new one). Nothing is signed, neither with a wrong key nor with the other
 * secret alone; nothing is lost: the delivery waits, retried. A rotation carries the value it cannot open as it
 * is (it answered 500, and a first fix dropped the value, which the rest of the fleet may still sign with); once
 * the rotation is confirmed the delivery goes out, signed with the new secret.
 * Its own service: a fast outbox re-drive, and a Redis prefix no other worker reads.
 */
let svc: TestService;
let receiver: Receiver;
beforeAll(async () => {
  svc = await startService({
    worker: true,
    env: {
      WEBHOOK_TIMEOUT_MS: '3000',
      WEBHOOK_REDRIVE_MS: '1000',
      WEBHOOK_STALL_MARGIN_MS: '1000',
      REDIS_PREFIX: `${testEnv().redisPrefix}-unreadable-${randomBytes(3).toString('hex')}`,
    },
  });
  receiver = await Receiver.start();
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
  await closeSql();
});

it('a delivery waits, unsigned and unspent; a rotation keeps the value as it is; once confirmed, the delivery goes out', async () => {
  const partner = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, partner.testKey);
  const put = await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: true });
  expect(put.status).toBe(200);
  const foreign = sealSecret(partner.id, put.body.secret, { SECRET_KEY: randomBytes(32).toString('hex') });
  await sql(`UPDATE webhook_endpoints SET secret = $2 WHERE partner_id = $1`, [partner.id, foreign]);
  const req = await mustCreateRequest(svc, partner.testKey, { account_id: m.id, fiat_amount_int: 1234 });
  const ev = await recordProofEvent(svc, { partnerId: partner.id, requestId: req.request_id });

  // Taken up, and not sent: no attempt is spent on it. Operators see it counted.
  await waitFor(async () => (await admin(svc, 'GET', `/deliveries/${ev.id}`)).body.state === 'delivering');
  await waitFor(async () => (sample(await svc.app.get(MetricsService).registry.metrics(), 'prs_webhook_secret_unavailable_total', {}) ?? 0) > 0);
  // The portal's test ping is refused in words, not a 500.
  expect(await svc.app.get(WebhookSettingsService).signingTarget(partner.id)).toEqual({ url: receiver.url, secrets: null });

  const rotated = await admin(svc, 'POST', `/partners/${partner.id}/webhook/rotate`);
  expect(rotated.status).toBe(200);
  const [row] = await sql(`SELECT previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [partner.id]);
  expect(row.previous_secret).toBe(foreign);

  expect((await admin(svc, 'POST', `/partners/${partner.id}/webhook/confirm-rotation`)).status).toBe(200);
  const [call] = await receiver.waitUntil((c) => c.length === 1, 20_000);
  expect(call.headers['x-service-delivery']).toBe(ev.id);
  expect(verifyWebhook(call.rawBody, String(call.headers['x-service-signature']), rotated.body.secret)).toMatchObject({ request_id: req.request_id });
  const shown = await waitFor(async () => {
    const d = await admin(svc, 'GET', `/deliveries/${ev.id}`);
    return d.body.state === 'delivered' && d.body;
  });
  expect(shown.attempt_log.map((a: any) => [a.attempt, a.outcome, a.status_code])).toEqual([[1, 'delivered', 200]]);
});
