import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { sample } from '../support/metrics';
import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/wait';

/*
 * An operator's alert on `prs_scrape_source_up{source="queues"} == 0` must fire on the scrape that could not
 * read Redis, not one scrape later: each scrape's prs_scrape_source_up says whether that same scrape's queue
 * depths were read. (It used to be rendered before the scrape's reads finished, so it reported the previous
 * scrape: 1 on the first scrape of an outage, with the queue depths already missing, and 0 on the first
 * scrape after Redis came back.)
 */
let redis: RedisServer;
let svc: TestService;

beforeAll(async () => {
  redis = await RedisServer.start();
  svc = await startService({ env: { REDIS_URL: redis.url } });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await redis?.down();
});

async function scrape(): Promise<{ up: number | null; depth: number | null }> {
  const r = await call(svc.adminUrl, 'GET', '/metrics');
  expect(r.status).toBe(200);
  return {
    up: sample(r.text, 'prs_scrape_source_up', { source: 'queues' }),
    depth: sample(r.text, 'prs_queue_jobs', { queue: 'verification', state: 'waiting' }),
  };
}

it('says in the same scrape whether the queue depths could be read: 0 from the first scrape of a Redis outage, 1 from the first after it', async () => {
  const before = await scrape();
  expect(before).toEqual({ up: 1, depth: 0 });

  await redis.down();
  const during = await scrape();
  expect(during.depth).toBeNull();
  expect(during.up).toBe(0);
  expect(await scrape()).toEqual({ up: 0, depth: null });

  await redis.up();
  // The first scrape that reads the depths again says so itself.
  const after = await waitFor(async () => {
    const s = await scrape();
    expect(s.up).toBe(s.depth === null ? 0 : 1);
    return s.depth !== null ? s : null;
  }, 20000, 200);
  expect(after).toEqual({ up: 1, depth: 0 });
}, 60000);
