import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { RedisConnections } from '../../common/redis/redis.module';
import { scaledLimit } from '../../common/rate-limit/rate-limit';

/** Spec §8: webhook URL or secret updates per minute per partner. */
export const WEBHOOK_UPDATES_PER_MINUTE = 10;
const WINDOW_MS = 60_000;

/**
 * One counter per partner and clock minute, shared by every path that changes a partner's webhook URL or
 * secret (admin API now, partner portal later: DESIGN §3), so the 11th update of a minute gets 429
 * rate_limited wherever it comes from. Like the API limiter, it lets calls through when Redis is away.
 */
@Injectable()
export class WebhookUpdateLimiter {
  private readonly logger = new Logger('WebhookUpdateLimiter');

  constructor(
    private readonly redis: RedisConnections,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async consume(partnerId: string): Promise<void> {
    const now = this.redis.now();
    const windowStart = now - (now % WINDOW_MS);
    const key = `${this.redis.channel('rl')}:webhook-updates:${partnerId}:${windowStart}`;
    const limit = scaledLimit(WEBHOOK_UPDATES_PER_MINUTE, this.config.rateLimitScale);
    let hits: number;
    try {
      hits = await this.redis.hitWindow(key, windowStart + WINDOW_MS + 1000);
    } catch (e) {
      this.logger.error(`cannot reach Redis, letting the webhook update through: ${(e as Error).message}`);
      return;
    }
    if (hits > limit) throw new AppError('rate_limited');
  }
}
