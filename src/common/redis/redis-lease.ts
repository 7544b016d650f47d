import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { RedisConnections } from './redis.module';

// Only the holder's token may extend or delete the key: a holder whose lease lapsed (a long pause) must not
// cut short the lease someone else took since.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

type LeaseCommands = Redis & {
  prsLeaseRenew(key: string, token: string, ttlMs: number): Promise<number>;
  prsLeaseRelease(key: string, token: string): Promise<number>;
};

/** A lease this process holds: renewed in the background until released. */
export interface HeldLease {
  release(): Promise<void>;
}

/**
 * Exclusive leases shared by every instance (DESIGN §1: nothing another instance needs lives in process
 * memory): `SET key token NX PX ttl` takes one, the holder renews it every third of its ttl, and releases it
 * with a compare-and-delete. A holder that dies stops renewing, and the lease lapses within ttl on its own.
 */
@Injectable()
export class RedisLeases {
  private readonly logger = new Logger('RedisLease');
  private readonly commands: LeaseCommands;

  constructor(private readonly redis: RedisConnections) {
    redis.main.defineCommand('prsLeaseRenew', { numberOfKeys: 1, lua: RENEW });
    redis.main.defineCommand('prsLeaseRelease', { numberOfKeys: 1, lua: RELEASE });
    this.commands = redis.main as LeaseCommands;
  }

  /** The lease on `name` for this process, or null while another holder has it. Rejects when Redis is away. */
  async acquire(name: string, ttlMs: number): Promise<HeldLease | null> {
    const key = this.redis.channel(`lease:${name}`);
    const token = randomBytes(16).toString('hex');
    let reply: string | null;
    try {
      reply = await this.redis.main.set(key, token, 'PX', ttlMs, 'NX');
    } catch (e) {
      // A command timeout only stops the waiting: the SET was sent, and a Redis that catches up runs it,
      // leaving a lease nobody holds (every export of that merchant refused for ttlMs). The
      // compare-and-delete goes right behind it on the same connection, so it runs after it; not awaited, so
      // the caller's fail-open does not wait on a stalled Redis.
      void this.commands.prsLeaseRelease(key, token).catch(() => undefined);
      throw e;
    }
    if (reply !== 'OK') return null;
    let released = false;
    const renew = async () => {
      try {
        if ((await this.commands.prsLeaseRenew(key, token, ttlMs)) === 0 && !released) {
          clearInterval(timer);
          this.logger.warn(`lease ${name} lapsed while held (renewals failed for ${ttlMs} ms)`);
        }
      } catch (e) {
        // Redis away for a moment: the next renewal may still come in time.
        this.logger.warn(`lease ${name} not renewed: ${(e as Error).message}`);
      }
    };
    const timer = setInterval(() => void renew(), Math.max(1, Math.floor(ttlMs / 3)));
    timer.unref();
    return {
      release: async () => {
        released = true;
        clearInterval(timer);
        // Not deleted (Redis away): it lapses within ttlMs.
        await this.commands.prsLeaseRelease(key, token).catch((e: Error) => this.logger.warn(`lease ${name} not released: ${e.message}`));
      },
    };
  }
}
