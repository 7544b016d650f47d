import { randomUUID } from 'node:crypto';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { RedisThrottlerStorage } from '../../src/common/rate-limit/redis-throttler.storage';
import { WebhookUpdateLimiter } from '../../src/modules/webhooks/webhook-update-limiter';
import { testConfig } from '../support/app';
import { withinOneMinute } from '../support/clock';
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
    // (Sent as the time left, so Redis's clock places it within the moments the command took to arrive.)
    const pexpireat = Number(await redis.main.pexpiretime(a));
    expect(Math.abs(pexpireat - at)).toBeLessThan(100);
    expect(Math.abs(Number(await redis.main.pexpiretime(b)) - at)).toBeLessThan(100);
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

  /**
   * Windows are named from Redis's clock, not the host's: an instance whose clock trails another's by seconds
   * would otherwise count a partner's calls around each minute's turn in the previous minute, a window of its
   * own, and the partner would get up to twice its limit. The lagging host is this one with Date.now stepped
   * back to 5 s before the current minute began (so its own clock names the previous minute) and its offset
   * measured again, as the instance does every 30 s.
   */
  it('instances whose clocks disagree count in the same window once each has read Redis\'s clock', async () => {
    await withinOneMinute(5000);
    await Promise.all([redis.syncClock(), other.syncClock()]);
    const bucket = `test-windows:${randomUUID()}`;
    const onTime = new RedisThrottlerStorage(redis);
    const before = [];
    for (let i = 0; i < 3; i++) before.push((await onTime.increment(bucket, 60_000, 4)).totalHits);
    const wall = Date.now.bind(Date);
    const behindMs = (wall() % 60_000) + 5000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => wall() - behindMs);
    try {
      await other.syncClock();
      expect(Math.abs(other.now() - wall())).toBeLessThan(200);
      const lagging = new RedisThrottlerStorage(other);
      const after = [await lagging.increment(bucket, 60_000, 4), await lagging.increment(bucket, 60_000, 4)];
      expect([...before, ...after.map((r) => r.totalHits)]).toEqual([1, 2, 3, 4, 5]);
      expect(after.map((r) => r.isBlocked)).toEqual([false, true]);
    } finally {
      clock.mockRestore();
      await other.syncClock();
    }
  });

  it('a slow TIME reply does not cost the measurement: it is taken again at once and the fastest reply is used', async () => {
    const wall = Date.now.bind(Date);
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 90_000);
    // The first TIME of the measurement answers after 300 ms (more than the 200 ms a reply may take to be
    // trusted), the next ones as Redis does.
    const time = other.main.time.bind(other.main);
    const slowFirst = jest.spyOn(other.main, 'time').mockImplementationOnce(() => new Promise((ok) => setTimeout(ok, 300)).then(() => time()));
    try {
      await other.syncClock();
      expect(slowFirst).toHaveBeenCalledTimes(2);
      expect(Math.abs(other.now() - wall())).toBeLessThan(200);
    } finally {
      slowFirst.mockRestore();
      clock.mockRestore();
      await other.syncClock();
    }
  });

  /**
   * A host whose wall clock trails Redis's (stepped back by NTP, or drifting) computes a window end that Redis
   * finds already past: an absolute expiry (PEXPIREAT) deletes the counter as it is created, every call counts
   * as the first, and that instance enforces no limit at all. Two minutes back, so the host's minute has the
   * same phase as Redis's and the calls stay in one window.
   */
  describe('a host clock two minutes behind Redis', () => {
    let clock: jest.SpyInstance | undefined;
    beforeEach(async () => {
      await withinOneMinute(5000);
      const wall = Date.now.bind(Date);
      clock = jest.spyOn(Date, 'now').mockImplementation(() => wall() - 120_000);
    });
    afterEach(() => clock?.mockRestore());

    it('the partner API limiter still counts the window and blocks the call after the limit', async () => {
      const storage = new RedisThrottlerStorage(redis);
      const bucket = `test-skew:${randomUUID()}`;
      const replies = [];
      for (let i = 0; i < 7; i++) replies.push(await storage.increment(bucket, 60_000, 6));
      expect(replies.map((r) => r.totalHits)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(replies.map((r) => r.isBlocked)).toEqual([false, false, false, false, false, false, true]);
    });

    it('the webhook update limiter still refuses the 11th update of the minute', async () => {
      const limiter = new WebhookUpdateLimiter(redis, { ...config, rateLimitScale: 1 });
      const partnerId = randomUUID();
      for (let i = 0; i < 10; i++) await limiter.consume(partnerId);
      await expect(limiter.consume(partnerId)).rejects.toMatchObject({ code: 'rate_limited' });
    });
  });
});
