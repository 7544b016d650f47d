import { randomUUID } from 'node:crypto';
import { RedisLeases } from '../../src/common/redis/redis-lease';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { testConfig } from '../support/app';
import { waitFor } from '../support/wait';

/** The exclusive lease the CSV export holds per merchant, on the real Redis, from two "instances". */
describe('RedisLeases', () => {
  const config = testConfig();
  let redis: RedisConnections;
  let otherRedis: RedisConnections;
  let here: RedisLeases;
  let there: RedisLeases;
  const name = () => `test:${randomUUID()}`;

  beforeAll(async () => {
    redis = new RedisConnections(config);
    otherRedis = new RedisConnections(config);
    await waitFor(async () => redis.main.status === 'ready' && otherRedis.main.status === 'ready');
    here = new RedisLeases(redis);
    there = new RedisLeases(otherRedis);
  });

  afterAll(async () => {
    await redis.onApplicationShutdown();
    await otherRedis.onApplicationShutdown();
  });

  it('is exclusive across instances, outlives its ttl while held (renewed), and is free again once released', async () => {
    const n = name();
    // A ttl a loaded machine's timers keep up with (at 300 ms a CI run once saw a renewal come too late).
    const lease = await here.acquire(n, 1000);
    expect(lease).not.toBeNull();
    expect(await there.acquire(n, 1000)).toBeNull();
    // Renewed three times (its remaining ttl seen going back up), so past its first PX: renewal keeps it.
    const key = redis.channel(`lease:${n}`);
    let renewals = 0;
    let last = Infinity;
    await waitFor(async () => {
      const ttl = await redis.main.pttl(key);
      if (ttl > last) renewals++;
      last = ttl;
      return renewals >= 3;
    }, 10000, 20);
    expect(await there.acquire(n, 1000)).toBeNull();
    await lease!.release();
    const next = await there.acquire(n, 300);
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('a holder that died (no renewals) loses it within its ttl; a stale holder\'s release does not free another\'s lease', async () => {
    const n = name();
    const key = redis.channel(`lease:${n}`);
    // What a crashed instance leaves: the key, and nobody renewing it.
    await redis.main.set(key, 'dead-holder', 'PX', 300);
    expect(await here.acquire(n, 300)).toBeNull();
    let lease: Awaited<ReturnType<RedisLeases['acquire']>> = null;
    await waitFor(async () => (lease = await here.acquire(n, 5000)) !== null, 3000, 50);
    // A holder whose lease lapsed and was taken since releases with its own token: nothing happens to ours.
    await redis.main.set(key, 'someone-else', 'PX', 5000);
    await lease!.release();
    expect(await redis.main.get(key)).toBe('someone-else');
    await redis.main.del(key);
  });
});
