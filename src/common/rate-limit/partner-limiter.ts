import { Injectable, Logger } from '@nestjs/common';
import { AppError } from '../errors';
import { RedisConnections } from '../redis/redis.module';

/**
 * Limits counted per owner rather than per caller: spec §8's per-partner limits that count every path making
 * the change (portal and admin alike), and a handle page's creates per merchant (HandlePageService). One Redis
 * counter per action, owner id and clock minute. Over the limit → 429 rate_limited. Fails open, like the API
 * limiter, when Redis is away.
 */
@Injectable()
export class PartnerLimiter {
  private readonly logger = new Logger('PartnerLimiter');

  constructor(private readonly redis: RedisConnections) {}

  async consume(action: string, ownerId: string, perMinute: number): Promise<void> {
    const now = this.redis.now();
    const minute = now - (now % 60000);
    const key = `${this.redis.channel('pl')}:${action}:${ownerId}:${minute}`;
    let hits: number;
    try {
      hits = await this.redis.hitWindow(key, minute + 61000);
    } catch (e) {
      this.logger.error(`cannot reach Redis for ${action} limit, allowing: ${(e as Error).message}`);
      return;
    }
    if (hits > perMinute) throw new AppError('rate_limited');
  }
}
