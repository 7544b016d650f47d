import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { EndpointLimiter } from './endpoint-limiter';
import { PartnerLimiter } from './partner-limiter';
import { RateLimitGuard } from './rate-limit.guard';
import { RedisThrottlerStorage } from './redis-throttler.storage';

@Module({ providers: [RedisThrottlerStorage], exports: [RedisThrottlerStorage] })
class StorageModule {}

/** @nestjs/throttler on Redis counters; controllers opt in with @UseGuards(…, RateLimitGuard) and @RateLimit. */
@Global()
@Module({
  imports: [
    StorageModule,
    ThrottlerModule.forRootAsync({
      imports: [StorageModule],
      inject: [RedisThrottlerStorage],
      useFactory: (storage: RedisThrottlerStorage) => ({
        throttlers: [{ name: 'default', ttl: 60000, limit: 60 }],
        storage,
        setHeaders: false,
      }),
    }),
  ],
  providers: [RateLimitGuard, PartnerLimiter, EndpointLimiter],
  exports: [ThrottlerModule, RateLimitGuard, PartnerLimiter, EndpointLimiter],
})
export class RateLimitModule {}
