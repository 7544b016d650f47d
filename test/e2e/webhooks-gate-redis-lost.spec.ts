import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import Redis from 'ioredis';
import { QUEUES } from '../../src/common/queue/queues';
import { APP_CONFIG, type AppConfig } from '../../src/config/config';
import { OutboxRedrive } from '../../src/modules/webhooks/outbox-redrive';
import { PartnerGate } from '../../src/modules/webhooks/partner-gate';
import { WebhookEventsRepository } from '../../src/modules/webhooks/webhook-events.repository';
import { WebhookRelay } from '../../src/modules/webhooks/webhook-relay';
import { partnerWithEvents } from '../factories/events';
import { startService, type TestService } from '../support/app';
import { abandonOpenDeliveries, closeSql, sql, updateEvents } from '../support/db';
import type { Receiver } from '../support/receiver';
import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/wait';

/*
 * (A Redis hunt.) The partner gate's slots live only in Redis. Redis loses its data (FLUSHALL, or a restart
 * without persistence) while a partner's WEBHOOK_PARTNER_CONCURRENCY attempts are being posted: those keep
 * running, but the gate forgot them, and the outbox re-drive (or the next relay) admitted a whole limit more,
 * so the partner's endpoint saw up to twice its limit at once (DESIGN §7). A service with its worker on a
 * Redis of its own, real Postgres, and a real receiver that holds every call until the test lets it go and
 * counts the calls it has open.
 */
const LIMIT = 3;
let svc: TestService;
let redis: RedisServer;
let cli: Redis;
const receivers: Receiver[] = [];
const partners: string[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  cli = new Redis(redis.url);
  svc = await startService({
    worker: true,
    // A long deadline: the held calls must still be open (not given up on) when the re-drive has run.
    // The re-drive every second: the events waiting in the gate when Redis lost them are sent again soon.
    env: { REDIS_URL: redis.url, WEBHOOK_PARTNER_CONCURRENCY: String(LIMIT), WEBHOOK_TIMEOUT_MS: '30000', WEBHOOK_REDRIVE_MS: '1000' },
  });
});
afterAll(async () => {
  if (partners.length) await abandonOpenDeliveries(partners);
  await closeSql();
  await Promise.all(receivers.map((r) => r.close()));
  await svc?.close();
  cli?.disconnect();
  await redis?.down();
});

it.each([
  ['the outbox re-drive', 'redrive'],
  ['the relay of new events', 'relay'],
] as const)('Redis losing its data while a partner’s attempts are in flight: %s admits none beyond the limit, and every event is still delivered once', async (_, after) => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let open = 0;
  let mostOpen = 0;
  const made = await partnerWithEvents(svc, 4 * LIMIT, 'ok');
  receivers.push(made.receiver);
  partners.push(made.partnerId);
  const [before, later] = [made.ids.slice(0, 3 * LIMIT), made.ids.slice(3 * LIMIT)];
  made.receiver.otherwise(async () => {
    open++;
    mostOpen = Math.max(mostOpen, open);
    await held;
    open--;
    return { status: 200 };
  });
  await svc.app.get(WebhookRelay).enqueue(before);
  await waitFor(async () => open === LIMIT);
  expect(await svc.app.get(PartnerGate).state(made.partnerId)).toEqual({ waiting: 2 * LIMIT, running: LIMIT });
  const [inFlight] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1 AND state = 'delivering'`, [made.partnerId]);
  expect(inFlight.n).toBe(LIMIT);

  // Redis loses everything, queues and gate. Then the waiting events, past the re-drive's grace, are re-driven;
  // or new events of the partner are committed and relayed.
  await cli.flushall();
  if (after === 'redrive') {
    await updateEvents(`next_attempt_at = now() - interval '1 minute'`, `partner_id = $1 AND state = 'pending'`, [made.partnerId]);
    await svc.app.get(OutboxRedrive).run();
  } else {
    await svc.app.get(WebhookRelay).enqueue(later);
  }

  // Whatever the re-drive queued has reached the receiver (or nothing was queued).
  const queue = svc.app.get<Queue>(getQueueToken(QUEUES.webhooks), { strict: false });
  await waitFor(async () => {
    const [waiting, active] = await Promise.all([queue.getWaitingCount(), queue.getActive()]);
    const seen = new Set(made.receiver.calls.map((c) => String(c.headers['x-service-delivery'])));
    return waiting === 0 && active.every((j) => seen.has(j.data.eventId));
  });
  expect({ open, calls: made.receiver.calls.length }).toEqual({ open: LIMIT, calls: LIMIT });

  // The held calls are answered: the rest go out, never more than the limit at once, each once.
  release();
  await waitFor(async () => {
    const [r] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1 AND state = 'delivered'`, [made.partnerId]);
    return r.n === made.ids.length;
  }, 30_000);
  expect(mostOpen).toBeLessThanOrEqual(LIMIT);
  const perDelivery = new Map<string, number>();
  for (const c of made.receiver.calls) perDelivery.set(String(c.headers['x-service-delivery']), (perDelivery.get(String(c.headers['x-service-delivery'])) ?? 0) + 1);
  expect([...perDelivery.keys()].sort()).toEqual([...made.ids].sort());
  expect([...perDelivery.values()].every((n) => n === 1)).toBe(true);
}, 90_000);

/*
 * (A review of the seeding.) The attempts in flight when Redis lost its data end after the seeding read them
 * in Postgres but before its script lands: their releases found no slot to free (nothing was seeded yet), and
 * the seeding then gave each a slot for a whole running lease (WEBHOOK_TIMEOUT_MS + WEBHOOK_STALL_MARGIN_MS,
 * here 60 s) that no delivery would release. With the whole limit taken so, the partner's next events waited
 * out that lease: its deliveries stopped for a minute (38 s at the defaults, up to an hour with a long margin).
 */
it('attempts that end between the seeding’s read of Postgres and its script hold no slot afterwards', async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const made = await partnerWithEvents(svc, 2 * LIMIT, 'ok');
  receivers.push(made.receiver);
  partners.push(made.partnerId);
  const [before, later] = [made.ids.slice(0, LIMIT), made.ids.slice(LIMIT)];
  let open = 0;
  made.receiver.otherwise(async () => {
    open++;
    await held;
    open--;
    return { status: 200 };
  });
  await svc.app.get(WebhookRelay).enqueue(before);
  await waitFor(async () => open === LIMIT);

  // The seeding reads the partner's LIMIT attempts 'delivering'; before its script runs, they are answered,
  // recorded and their slots released.
  const events = svc.app.get(WebhookEventsRepository);
  const read = events.claimedAttempts.bind(events);
  const spy = jest.spyOn(events, 'claimedAttempts').mockImplementationOnce(async (leaseMs) => {
    const rows = await read(leaseMs);
    release();
    await waitFor(async () => {
      const [r] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE id = ANY($1) AND state = 'delivered'`, [before]);
      return r.n === LIMIT;
    });
    // Their releases have reached the gate (noted as released while its state is unknown).
    await waitFor(async () => (await cli.scard(`${svc.app.get<AppConfig>(APP_CONFIG).redisPrefix}:webhook-gate-released`)) === LIMIT);
    return rows;
  });
  try {
    await cli.flushall();
    await svc.app.get(WebhookRelay).enqueue(later);
    // Nothing is in flight for the partner: its new events go out at once, not after a lease.
    await waitFor(async () => {
      const [r] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE partner_id = $1 AND state = 'delivered'`, [made.partnerId]);
      return r.n === made.ids.length;
    }, 10_000);
    expect(spy).toHaveBeenCalled();
  } finally {
    spy.mockRestore();
    release();
  }
}, 60_000);
