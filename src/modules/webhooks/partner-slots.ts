import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { RedisConnections } from '../../common/redis/redis.module';

/** A held delivery slot of one partner; release it when the attempt is over. */
export interface PartnerSlot {
  release(): Promise<void>;
}

// A sorted set per partner: members are leases, scores their expiry (ms). Expired leases (a worker that died
// mid-delivery) are dropped before counting, so a crash never keeps a slot for longer than the lease.
const ACQUIRE = `
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  return 1`;

/**
 * At most `limit` deliveries of one partner in flight across every worker (DESIGN §7, webhook fairness), so
 * a partner whose endpoint hangs holds a bounded share of the delivery slots and the others keep flowing.
 */
@Injectable()
export class PartnerSlots {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisConnections,
  ) {}

  /** A slot, or null when the partner already has `limit` deliveries in flight. */
  async tryAcquire(partnerId: string, limit: number, leaseMs: number): Promise<PartnerSlot | null> {
    const key = `${this.config.redisPrefix}:webhook-slots:${partnerId}`;
    const lease = randomUUID();
    const now = Date.now();
    const got = (await this.redis.main.eval(ACQUIRE, 1, key, now, limit, now + leaseMs, lease)) as number;
    if (got !== 1) return null;
    return { release: async () => void (await this.redis.main.zrem(key, lease)) };
  }
}
