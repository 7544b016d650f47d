import { Throttle } from '@nestjs/throttler';

/** Calls per minute for one endpoint (spec §8); RATE_LIMIT_SCALE multiplies it. */
export const RateLimit = (perMinute: number) => Throttle({ default: { limit: perMinute, ttl: 60000 } });

/** Public page endpoints, counted per client address: the guard takes the limit from PUBLIC_RATE_LIMIT. */
export const PublicRateLimit = () => Throttle({ default: { limit: 300, ttl: 60000 } });
