import { signInDashboard } from '../factories/dashboard';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql } from '../support/db';
import { RedisServer } from '../support/redis-server';

/*
 * A CSV export takes its merchant's lease in Redis (SET NX) and goes on without it when Redis does not answer
 * within the client's command timeout. The SET was sent all the same: a Redis that caught up ran it and left
 * a lease nobody held, and every export of that merchant was refused (429) for the lease's 30 s. A CI run saw
 * it as a CSV with no rows (a helper traced it). The timed-out SET is now followed by its compare-and-delete.
 */
let redis: RedisServer;
let svc: TestService;

beforeAll(async () => {
  redis = await RedisServer.start();
  svc = await startService({ worker: false, env: { REDIS_URL: redis.url } });
}, 60000);

afterAll(async () => {
  redis?.resume();
  await svc?.close();
  await redis?.down();
  await closeSql();
});

it('an export whose lease Redis answered too late leaves no lease behind: the next export runs', async () => {
  const p = await createPartner(svc);
  const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, p.testKey)).wallet);
  const made = await c.call('POST', '/requests', { body: { fiat_amount_int: 10 } });
  expect(made.status).toBe(201);

  redis.stall();
  // Fails open past the command timeout (the rate limit, then the lease) and streams from Postgres.
  const first = await c.call('GET', '/requests.csv');
  redis.resume();
  expect(first.status).toBe(200);
  expect(first.text).toContain(made.body.request_id);

  const next = await c.call('GET', '/requests.csv');
  expect({ status: next.status, refusal: next.status === 200 ? null : next.text }).toEqual({ status: 200, refusal: null });
  expect(next.text).toContain(made.body.request_id);
});
