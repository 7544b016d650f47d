import { WebhookRelay } from '../../src/modules/webhooks/webhook-relay';
import { partnerWithEvents } from '../factories/events';
import { startService, type TestService } from '../support/app';
import { abandonOpenDeliveries, closeSql, sql } from '../support/db';
import type { Receiver } from '../support/receiver';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait';

/*
 * The partner gate's scripts (admit, release) run on the Redis connection that gives up on a reply after 1 s.
 * Redis that stalls longer still runs them when it resumes: the slots they hand out are held by attempts
 * nobody queued, and the partner's deliveries waited for those slots' lease (60 s + WEBHOOK_TIMEOUT_MS +
 * WEBHOOK_STALL_MARGIN_MS, 98 s by default) after every such stall (a helper's hunt). The outbox re-drive now
 * hands back a slot taken over 10 s ago by an attempt with no job and no claim.
 */
let redis: RedisServer;
let svc: TestService;
const receivers: Receiver[] = [];
const partners: string[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  svc = await startService({
    worker: true,
    env: {
      REDIS_URL: redis.url,
      WEBHOOK_REDRIVE_MS: '1000',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_STALL_MARGIN_MS: '2000',
      WEBHOOK_PARTNER_CONCURRENCY: '2',
    },
  });
}, 60000);

afterAll(async () => {
  redis?.resume();
  await abandonOpenDeliveries(partners).catch(() => undefined);
  await svc?.close();
  await Promise.all(receivers.map((r) => r.close()));
  await redis?.down();
  await closeSql();
});

async function partner(n: number, answer: Parameters<typeof partnerWithEvents>[2]) {
  const made = await partnerWithEvents(svc, n, answer);
  partners.push(made.partnerId);
  receivers.push(made.receiver);
  return made;
}

const delivered = async (ids: string[]) =>
  (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY($1) AND state = 'delivered'`, [ids]))[0].n;

// Without the hand-back, the slots' lease here is 64 s: the waits below are well under it.
it('events relayed while Redis stalls past the command timeout are delivered soon after it resumes', async () => {
  const made = await partner(3, 'ok');
  redis.stall();
  // The relay gives up on the gate's answer after 1 s (it never throws); Redis runs the script on resume.
  const relayed = svc.app.get(WebhookRelay).enqueue(made.ids);
  // The outage itself: 2 s, past the client's command timeout.
  await sleep(2000);
  redis.resume();
  await relayed;
  await waitFor(async () => (await delivered(made.ids)) === 3, 25_000, 200);
  expect(made.receiver.calls).toHaveLength(3);
}, 60000);

it('slots released into a stall past the command timeout do not hold the partner\'s next deliveries', async () => {
  // Each call is answered after 1.5 s, so both slots' releases go out while Redis is stalled.
  const made = await partner(6, { delayMs: 1500 });
  await svc.app.get(WebhookRelay).enqueue(made.ids);
  await made.receiver.waitForCalls(2, 10_000);
  redis.stall();
  // The outage itself: 4 s, past the answers (1.5 s), their records and the releases' 1 s timeout.
  await sleep(4000);
  redis.resume();
  await waitFor(async () => (await delivered(made.ids)) === 6, 30_000, 200);
  expect(new Set(made.receiver.calls.map((c) => c.headers['x-service-delivery'])).size).toBe(6);
}, 90000);
