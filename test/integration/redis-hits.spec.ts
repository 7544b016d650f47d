import { randomUUID } from 'node:crypto';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { testConfig } from '../support/app';
import { waitFor } from '../support/wait';

/** RedisConnections.hitWindow on the real Redis: the calls of one event-loop turn share one INCRBY per key. */
describe('RedisConnections.hitWindow', () => {
  const config = testConfig();
  let redis: RedisConnections;
  let other: RedisConnections;
  const key = () => `${config.redisPrefix}:test-hits:${randomUUID()}`;

  beforeAll(async () => {
    redis = new RedisConnections(config);
    other = new RedisConnections(config);
    await waitFor(async () => redis.main.status === 'ready' && other.main.status === 'ready');
  });

  afterAll(async () => {
    await redis.onApplicationShutdown();
    await other.onApplicationShutdown();
  });

  it('answers concurrent hits the counts sequential INCRs would, per key, across instances, and sets the expiry once', async () => {
    const [a, b] = [key(), key()];
    const at = Date.now() + 60_000;
    const first = await Promise.all([...Array(5)].map((_, i) => (i % 2 ? other : redis).hitWindow(a, at)));
    // Each instance's callers get consecutive counts in call order; together they count every hit once.
    expect([...first].sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5]);
    expect(first.filter((_, i) => i % 2 === 0)).toEqual([...first.filter((_, i) => i % 2 === 0)].sort((x, y) => x - y));
    const mixed = await Promise.all([redis.hitWindow(a, at), redis.hitWindow(b, at), redis.hitWindow(a, at + 5_000), redis.hitWindow(b, at)]);
    expect(mixed).toEqual([6, 1, 7, 2]);
    // The window's end comes from the call that created the key; later hits do not move it.
    const pexpireat = Number(await redis.main.pexpiretime(a));
    expect(pexpireat).toBe(at);
    expect(Number(await redis.main.pexpiretime(b))).toBe(at);
    await redis.main.del(a, b);
  });

  it('fails every caller of a turn when Redis refuses (the limiters then fail open)', async () => {
    const down = new RedisConnections({ ...config, redisUrl: 'redis://127.0.0.1:1' });
    try {
      const results = await Promise.allSettled([down.hitWindow(key(), Date.now() + 1000), down.hitWindow(key(), Date.now() + 1000)]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    } finally {
      await down.onApplicationShutdown();
    }
  });
});
