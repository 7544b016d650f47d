import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../../config/config';

export const REDIS = Symbol('REDIS');

/**
 * The connection to Redis for counters. It fails fast when Redis is away (no offline queue), so the rate
 * limiter can fail open and the API keeps serving. Cache invalidations between instances do not use Redis:
 * they travel on Postgres (database/change-feed.ts), so a Redis outage never leaves a revoked key accepted.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly main: Redis;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.main = new Redis(config.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1000,
      lazyConnect: false,
      // Commands issued in one event-loop turn (rate-limit hits of concurrent calls) go out in one write.
      enableAutoPipelining: true,
    });
    this.main.defineCommand('prsHit', {
      numberOfKeys: 1,
      lua: `local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIREAT', KEYS[1], ARGV[1]) end return n`,
    });
    this.main.on('error', (e) => this.logger.warn(`redis: ${e.message}`));
  }

  /**
   * Counts one hit in a fixed window: INCR, and on the first hit PEXPIREAT the window's end. One command
   * (EVALSHA of a script ioredis loads once), so the hot path pays one round trip and one reply to parse.
   */
  hitWindow(key: string, expireAtMs: number): Promise<number> {
    return (this.main as Redis & { prsHit(key: string, at: number): Promise<number> }).prsHit(key, expireAtMs);
  }

  channel(name: string): string {
    return `${this.config.redisPrefix}:${name}`;
  }

  async onApplicationShutdown(): Promise<void> {
    this.main.disconnect();
  }
}

@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisModule {}
