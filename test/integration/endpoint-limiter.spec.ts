import { randomUUID } from 'node:crypto';
import { Reflector } from '@nestjs/core';
import { EndpointLimiter } from '../../src/common/rate-limit/endpoint-limiter';
import { RateLimit } from '../../src/common/rate-limit/rate-limit';
import { RedisThrottlerStorage } from '../../src/common/rate-limit/redis-throttler.storage';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { testConfig } from '../support/app';
import { freshMinute } from '../support/clock';
import { waitFor } from '../support/wait';

@RateLimit(3)
class Limited {
  inherits(): void {}
  @RateLimit(5)
  overrides(): void {}
}

class Unlimited {
  open(): void {}
}

/** EndpointLimiter on the real Redis: the method's @RateLimit, else its controller's, as RateLimitGuard reads @Throttle. */
describe('EndpointLimiter', () => {
  const config = testConfig({ RATE_LIMIT_SCALE: '1' });
  let redis: RedisConnections;
  let limiter: EndpointLimiter;

  beforeAll(async () => {
    redis = new RedisConnections(config);
    await waitFor(async () => redis.main.status === 'ready');
    limiter = new EndpointLimiter(new RedisThrottlerStorage(redis), new Reflector(), config);
  });
  afterAll(() => redis.onApplicationShutdown());

  /** How many of `tries` calls pass before the first 429. */
  async function allowed(handler: Function, tries: number): Promise<number> {
    const tracker = randomUUID();
    for (let i = 0; i < tries; i++) {
      try {
        await limiter.consume(Limited, handler, tracker);
      } catch (e) {
        expect(e).toMatchObject({ code: 'rate_limited' });
        return i;
      }
    }
    return tries;
  }

  it("takes a controller's @RateLimit for a method without one, and the method's own over it", async () => {
    // A whole minute left: ten calls stay in one window even on a machine stalled by load.
    freshMinute();
    expect(await allowed(Limited.prototype.inherits, 10)).toBe(3);
    expect(await allowed(Limited.prototype.overrides, 10)).toBe(5);
  });

  it('refuses to count an endpoint that has no @RateLimit at all (a programming error, not a pass)', async () => {
    await expect(limiter.consume(Unlimited, Unlimited.prototype.open, randomUUID())).rejects.toThrow(/has no @RateLimit/);
  });
});
