import { Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../errors';
import { endpointBucket, RATE_LIMIT_PER_MINUTE, RATE_LIMIT_TTL_MS, scaledLimit } from './rate-limit';
import { RedisThrottlerStorage } from './redis-throttler.storage';

/**
 * One call against an endpoint's @RateLimit, for a guard that has identified the caller itself (the partner
 * API's): the bucket is RateLimitGuard's (controller.method:tracker, clock minute, × RATE_LIMIT_SCALE), so both
 * count the same calls the same way. The limit is the method's @RateLimit, else its controller's. Over the
 * limit → 429 rate_limited; Redis away → the call goes through.
 */
@Injectable()
export class EndpointLimiter {
  constructor(
    private readonly storage: RedisThrottlerStorage,
    private readonly reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async consume(controller: Function, handler: Function, tracker: string): Promise<void> {
    // The method's @RateLimit, else its controller's, as RateLimitGuard (ThrottlerGuard) resolves @Throttle.
    const perMinute = this.reflector.getAllAndOverride<number | undefined>(RATE_LIMIT_PER_MINUTE, [handler, controller]);
    if (perMinute === undefined) throw new Error(`${controller.name}.${handler.name} has no @RateLimit`);
    const limit = scaledLimit(perMinute, this.config.rateLimitScale);
    const { isBlocked } = await this.storage.increment(endpointBucket(controller.name, handler.name, tracker), RATE_LIMIT_TTL_MS, limit);
    if (isBlocked) throw new AppError('rate_limited');
  }
}
