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
import { waitFor } from '../support/wait';

/*
 * A partner whose stored webhook secret does not open: sealed under a key this service does not hold
 * (SECRET_KEY replaced without SECRET_KEY_PREVIOUS, or that removed before every row was sealed again). Nothing
 * is signed with a wrong key; the attempts are spent and shown, so the delivery ends abandoned instead of
 * waiting unseen in `delivering`; rotating gives the partner a secret that works, and a redelivery then lands.
 * Its own service: a short retry schedule, and a Redis prefix no other worker reads.
 */
let svc: TestService;
let receiver: Receiver;
beforeAll(async () => {
  svc = await startService({
    worker: true,
    env: {
      WEBHOOK_RETRY_DELAYS_MS: '200,400',
      WEBHOOK_MAX_ATTEMPTS: '3',
      WEBHOOK_TIMEOUT_MS: '3000',
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

it('deliveries spend their attempts as secret_unavailable and end abandoned, sending nothing; a rotation mends it', async () => {
  const partner = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, partner.testKey);
  const put = await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: true });
  expect(put.status).toBe(200);
  const foreign = sealSecret(partner.id, put.body.secret, { SECRET_KEY: randomBytes(32).toString('hex') });
  await sql(`UPDATE webhook_endpoints SET secret = $2 WHERE partner_id = $1`, [partner.id, foreign]);
  const req = await mustCreateRequest(svc, partner.testKey, { account_id: m.id, fiat_amount_int: 1234 });
  const ev = await recordProofEvent(svc, { partnerId: partner.id, requestId: req.request_id });

  const shown = await waitFor(async () => {
    const d = await admin(svc, 'GET', `/deliveries/${ev.id}`);
    return d.body.state === 'abandoned' && d.body;
  });
  expect(shown.attempts).toBe(3);
  expect(shown.attempt_log.map((a: any) => [a.attempt, a.outcome, a.error_class, a.status_code])).toEqual([
    [1, 'retry', 'secret_unavailable', null],
    [2, 'retry', 'secret_unavailable', null],
    [3, 'abandoned', 'secret_unavailable', null],
  ]);
  expect(receiver.calls).toHaveLength(0);
  // The portal's test ping is refused in words, not a 500.
  expect(await svc.app.get(WebhookSettingsService).signingTarget(partner.id)).toEqual({ url: receiver.url, secrets: null });

  // Rotating does not carry the secret that does not open (it could sign nothing), and says so in the trail.
  const rotated = await admin(svc, 'POST', `/partners/${partner.id}/webhook/rotate`);
  expect(rotated.status).toBe(200);
  const [row] = await sql(`SELECT previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [partner.id]);
  expect(row.previous_secret).toBeNull();
  const [trail] = await sql(`SELECT details FROM audit_events WHERE partner_id = $1 AND action = 'webhook.secret_rotated'`, [partner.id]);
  expect(trail.details).toEqual({ replaced_pending_rotation: false, unreadable_secret_dropped: true });

  // Redelivered, it lands, signed with the new secret.
  expect((await admin(svc, 'POST', `/deliveries/${ev.id}/redeliver`)).status).toBe(200);
  const [call] = await receiver.waitUntil((c) => c.length === 1);
  expect(verifyWebhook(call.rawBody, String(call.headers['x-service-signature']), rotated.body.secret).request_id).toBe(req.request_id);
  await waitFor(async () => (await admin(svc, 'GET', `/deliveries/${ev.id}`)).body.state === 'delivered');
});
