import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../../config/config';

/** How often each instance measures its offset from Redis's clock, and the slowest reply it trusts for it. */
const CLOCK_SYNC_EVERY_MS = 30_000;
const CLOCK_SYNC_MAX_RTT_MS = 200;
const CLOCK_SYNC_SAMPLES = 3;

interface PendingHits {
  expireAtMs: number;
  waiters: Array<{ resolve: (n: number) => void; reject: (e: unknown) => void }>;
}

/**
 * The connection to Redis for counters. It fails fast when Redis is away (no offline queue), so the rate
 * limiter can fail open and the API keeps serving. Cache invalidations between instances do not use Redis:
 * they travel on Postgres (database/change-feed.ts), so a Redis outage never leaves a revoked key accepted.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly main: Redis;
  /** Redis's clock minus this host's, in ms: see now(). */
  private clockOffsetMs = 0;
  private readonly clockTimer: NodeJS.Timeout;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.main = new Redis(config.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1000,
      lazyConnect: false,
      // Commands issued in one event-loop turn (rate-limit hits of concurrent calls) go out in one write.
      enableAutoPipelining: true,
    });
    // INCRBY the hits of one turn; the window's end is set by whichever call created the key. Relative (PEXPIRE,
    // not PEXPIREAT): should now()'s offset be stale (this host's clock stepped since it was measured), a window end
    // in Redis's past as an absolute expiry would delete the counter as it is created, and no call would ever be
    // over the limit.
    this.main.defineCommand('prsHit', {
      numberOfKeys: 1,
      lua: `local n = redis.call('INCRBY', KEYS[1], ARGV[2]) if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n`,
    });
    this.main.on('error', (e) => this.logger.warn(`redis: ${e.message}`));
    this.main.on('ready', () => void this.syncClock());
    this.clockTimer = setInterval(() => void this.syncClock(), CLOCK_SYNC_EVERY_MS).unref();
  }

  /**
   * Now on Redis's clock, as this host last measured it (milliseconds): the one clock every instance names its
   * fixed windows from. Named from each host's own clock, two instances a few seconds apart count a partner's
   * calls around each minute's turn in two different windows, so the partner gets more than its limit; with
   * Redis's, they agree within a reply's time. Before the first measurement (or with Redis away) it is this
   * host's clock.
   */
  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  /**
   * Measures the offset with TIME, placing Redis's reading halfway through the round trip: up to
   * CLOCK_SYNC_SAMPLES readings, stopping at the first quick one, and the quickest is used (a reply delayed by
   * a busy moment would otherwise cost the measurement until the next one). Never throws.
   */
  async syncClock(): Promise<void> {
    if (this.main.status !== 'ready') return; // the 'ready' event measures again
    try {
      let best: { rtt: number; offset: number } | null = null;
      for (let i = 0; i < CLOCK_SYNC_SAMPLES && (best === null || best.rtt > CLOCK_SYNC_MAX_RTT_MS); i++) {
        const sent = Date.now();
        const [seconds, micros] = await this.main.time();
        const received = Date.now();
        const offset = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Math.round((sent + received) / 2);
        if (best === null || received - sent < best.rtt) best = { rtt: received - sent, offset };
      }
      if (best!.rtt > CLOCK_SYNC_MAX_RTT_MS) {
        this.logger.warn(`Redis TIME took ${best!.rtt} ms at best of ${CLOCK_SYNC_SAMPLES}; keeping the last clock offset (${this.clockOffsetMs} ms)`);
        return;
      }
      this.clockOffsetMs = best!.offset;
    } catch (e) {
      this.logger.warn(`cannot read Redis's clock, keeping the last offset: ${(e as Error).message}`);
    }
  }

  /** Hits counted during this turn of the event loop, by key: sent together once the turn's I/O is handled. */
  private pendingHits = new Map<string, PendingHits>();

  /**
   * Counts one hit in a fixed window and answers the count including it: INCRBY, and an expiry at the window's
   * end (`expireAtMs`, on the clock of now(), sent as the time left) when the key is new. The hits of one
   * event-loop turn on the same key (a partner's concurrent calls to one endpoint) are one command, INCRBY n,
   * and its callers get the counts n sequential INCRs would have answered, in call order; all of the turn's
   * keys go out in one pipeline. One EVALSHA (a script ioredis loads once) per key and turn instead of one per
   * call: one reply to parse, one promise to settle.
   */
  hitWindow(key: string, expireAtMs: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let pending = this.pendingHits.get(key);
      if (!pending) {
        if (this.pendingHits.size === 0) setImmediate(() => this.sendHits());
        pending = { expireAtMs, waiters: [] };
        this.pendingHits.set(key, pending);
      }
      pending.waiters.push({ resolve, reject });
    });
  }

  private sendHits(): void {
    const batch = this.pendingHits;
    this.pendingHits = new Map();
    const failAll = (e: unknown) => {
      for (const { waiters } of batch.values()) for (const w of waiters) w.reject(e);
    };
    // Sent from setImmediate: a throw here would reach no caller, so every one of the turn's callers is answered.
    try {
      const pipeline = this.main.pipeline() as ReturnType<Redis['pipeline']> & { prsHit(key: string, ttlMs: number, by: number): unknown };
      const now = this.now();
      for (const [key, { expireAtMs, waiters }] of batch) pipeline.prsHit(key, Math.max(1, expireAtMs - now), waiters.length);
      pipeline.exec().then((replies) => {
        let i = 0;
        for (const { waiters } of batch.values()) {
          const [err, total] = replies?.[i++] ?? [new Error('redis: no reply')];
          waiters.forEach((w, j) => (err ? w.reject(err) : w.resolve(Number(total) - waiters.length + 1 + j)));
        }
      }, failAll);
    } catch (e) {
      failAll(e);
    }
  }

  channel(name: string): string {
    return `${this.config.redisPrefix}:${name}`;
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.clockTimer);
    this.main.disconnect();
  }
}

@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisModule {}
