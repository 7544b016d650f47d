import { Injectable, Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { RedisConnections } from '../redis/redis.module';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * Fixed clock-minute windows (spec §8: "the limit resets at the start of the next minute"): the counter's
 * key carries the minute, read on Redis's clock (RedisConnections.now(), so every instance names the same
 * window), and one script call (INCRBY, an expiry on the first hit) is the only round trip.
 * When Redis is away the call goes through and the outage is logged (DESIGN §3): the API keeps serving.
 */
@Injectable()
export class RedisThrottlerStorage implements ThrottlerStorage {
  private readonly logger = new Logger('RateLimit');
  private lastWarn = 0;

  constructor(private readonly redis: RedisConnections) {}

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = this.redis.now();
    const windowStart = now - (now % ttl);
    const windowEnd = windowStart + ttl;
    const redisKey = `${this.redis.channel('rl')}:${key}:${windowStart}`;
    try {
      const totalHits = await this.redis.hitWindow(redisKey, windowEnd + 1000);
      const timeToExpire = Math.ceil((windowEnd - now) / 1000);
      const isBlocked = totalHits > limit;
      return { totalHits, timeToExpire, isBlocked, timeToBlockExpire: isBlocked ? timeToExpire : 0 };
    } catch (e) {
      if (now - this.lastWarn > 10000) {
        this.lastWarn = now;
        this.logger.error(`rate limiter cannot reach Redis, letting calls through: ${(e as Error).message}`);
      }
      return { totalHits: 0, timeToExpire: 0, isBlocked: false, timeToBlockExpire: 0 };
    }
  }
}
