import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../../config/config';

export const REDIS = Symbol('REDIS');

/**
 * Connections to Redis. `main` fails fast when Redis is away (no offline queue), so the rate limiter can
 * fail open and the API keeps serving; `subscriber` carries cache invalidations between instances.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly main: Redis;
  readonly subscriber: Redis;
  private readonly handlers = new Map<string, Array<(message: string) => void>>();

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
    this.subscriber = new Redis(config.redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
    for (const c of [this.main, this.subscriber]) c.on('error', (e) => this.logger.warn(`redis: ${e.message}`));
    this.subscriber.on('message', (channel: string, message: string) => {
      for (const h of this.handlers.get(channel) ?? []) h(message);
    });
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

  /**
   * Calls handler for every message published on the channel by any instance (this one included). Does not
   * wait for Redis: a service starting while Redis is away must still start (ioredis subscribes once it
   * connects, and again after every reconnect).
   */
  async subscribe(name: string, handler: (message: string) => void): Promise<void> {
    const ch = this.channel(name);
    const list = this.handlers.get(ch) ?? [];
    list.push(handler);
    this.handlers.set(ch, list);
    if (list.length === 1) {
      this.subscriber.subscribe(ch).catch((e: Error) => this.logger.warn(`cannot subscribe to ${ch}: ${e.message}`));
    }
  }

  async publish(name: string, message: string): Promise<void> {
    await this.main.publish(this.channel(name), message);
  }

  async onApplicationShutdown(): Promise<void> {
    this.main.disconnect();
    this.subscriber.disconnect();
  }
}

@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisModule {}
