import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { QUEUES } from '../../src/common/queue/queues';
import { PartnerGate } from '../../src/modules/webhooks/partner-gate';
import { deliveryJobId } from '../../src/modules/webhooks/webhook-delivery.queue';
import { WebhookRelay } from '../../src/modules/webhooks/webhook-relay';
import { verifyWebhook } from '../../sdk/webhook-verify/src/index';
import { partnerWithEvents as recordPartnerEvents } from '../factories/events';
import { startService, type TestService } from '../support/app';
import type { Receiver } from '../support/receiver';
import { waitFor } from '../support/wait';
import { abandonOpenDeliveries, closeSql, sql } from '../support/db';

/*
 * Webhook fairness (issue 10 point 5, DESIGN §7): one partner whose endpoint never answers, with hundreds
 * of events queued ahead of a healthy partner's, on a real service with its worker (50 concurrent attempts),
 * real Postgres and Redis. The hanging partner holds at most WEBHOOK_PARTNER_CONCURRENCY (default 10)
 * attempts; its other events wait in its gate without spending attempts or worker time; the healthy partner
 * is served within seconds.
 */
const HANGING_EVENTS = 300;
const HEALTHY_EVENTS = 20;

let svc: TestService;
/** Direct SQL on the run's database, for arranging and checking stored state. */
const db = { query: sql };
const receivers: Receiver[] = [];
const partners: string[] = [];

beforeAll(async () => {
  // A deadline far beyond the test: a hanging attempt holds its slot until the receiver closes.
  svc = await startService({ worker: true, env: { WEBHOOK_TIMEOUT_MS: '120000' } });
});
afterAll(async () => {
  // Nothing left for the outbox relays of later specs' workers (they share this database) to pick up and retry.
  await abandonOpenDeliveries(partners);
  await closeSql();
  // Receivers first: the worker waits for running attempts when it closes.
  await Promise.all(receivers.map((r) => r.close()));
  await svc?.close();
});

async function partnerWithEvents(n: number, answer: 'hang' | 'ok') {
  const made = await recordPartnerEvents(svc, n, answer);
  partners.push(made.partnerId);
  receivers.push(made.receiver);
  return made;
}

it('a hanging partner holds at most its slots; a healthy partner queued behind it is delivered within seconds', async () => {
  const limit = svc.config.webhookPartnerConcurrency;
  expect(limit).toBe(10);
  const hanging = await partnerWithEvents(HANGING_EVENTS, 'hang');
  const healthy = await partnerWithEvents(HEALTHY_EVENTS, 'ok');
  const relay = svc.app.get(WebhookRelay);

  // The hanging partner's events go into the queue first, all of them ahead of the healthy partner's.
  await relay.enqueue(hanging.ids);
  await hanging.receiver.waitForCalls(limit);
  const healthyQueuedAt = Date.now();
  await relay.enqueue(healthy.ids);

  await healthy.receiver.waitUntil((calls) => new Set(calls.map((c) => c.headers['x-service-delivery'])).size === HEALTHY_EVENTS, 10_000);
  expect(Date.now() - healthyQueuedAt).toBeLessThan(10_000);
  for (const c of healthy.receiver.calls) {
    expect(verifyWebhook(c.rawBody, String(c.headers['x-service-signature']), healthy.secret).delivery_id).toBe(c.headers['x-service-delivery']);
  }
  await waitFor(async () => {
    const [r] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1 AND state = 'delivered'`, [healthy.partnerId]);
    return r.n === HEALTHY_EVENTS;
  }, 10_000);

  // The others wait in the partner's gate, not in BullMQ: no worker picks them up until a slot frees, and
  // still only `limit` calls ever reached the hanging endpoint (none was answered: every call is in flight).
  expect(await svc.app.get(PartnerGate).state(hanging.partnerId)).toEqual({ waiting: HANGING_EVENTS - limit, running: limit });
  expect(hanging.receiver.calls).toHaveLength(limit);
  expect(hanging.receiver.calls.every((c) => c.answeredAt === undefined)).toBe(true);

  // Hundreds wait, and waiting spent no attempt: not in the outbox, not in the attempt log, and none is a job.
  const states = await db.query<{ state: string; attempts: number; n: number }>(
    `SELECT state, attempts, count(*)::int AS n FROM webhook_events WHERE partner_id = $1 GROUP BY state, attempts ORDER BY state`,
    [hanging.partnerId],
  );
  expect(states).toEqual([
    { state: 'delivering', attempts: 0, n: limit },
    { state: 'pending', attempts: 0, n: HANGING_EVENTS - limit },
  ]);
  const [logged] = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id WHERE e.partner_id = $1`,
    [hanging.partnerId],
  );
  expect(logged.n).toBe(0);
  const queue = svc.app.get<Queue>(getQueueToken(QUEUES.webhooks));
  const running = new Set(hanging.receiver.calls.map((c) => String(c.headers['x-service-delivery'])));
  const jobs = await Promise.all(hanging.ids.filter((id) => !running.has(id)).map((id) => queue.getJob(deliveryJobId(id, 1))));
  expect(jobs.filter((j) => j !== undefined)).toEqual([]);
}, 90_000);
