import { applyDecorators, SetMetadata } from '@nestjs/common';
import { Throttle } from '@nestjs/throttler';

export const RATE_LIMIT_TTL_MS = 60000;
/** The per-minute figure of @RateLimit, for EndpointLimiter (RateLimitGuard reads @Throttle's copy). */
export const RATE_LIMIT_PER_MINUTE = 'prs:rate_limit_per_minute';

/**
 * The Redis bucket of one caller on one endpoint, shared by RateLimitGuard and EndpointLimiter so both count
 * the same calls: named by the controller method (the accounts alias and path variants reach the same one).
 */
export const endpointBucket = (controller: string, handler: string, tracker: string) => `${controller}.${handler}:${tracker}`;

/** A per-minute figure as enforced: RATE_LIMIT_SCALE applied, never below one call. */
export const scaledLimit = (perMinute: number, scale: number) => Math.max(1, Math.floor(perMinute * scale));

/** Calls per minute for one endpoint (spec §8); RATE_LIMIT_SCALE multiplies it. */
export const RateLimit = (perMinute: number) =>
  applyDecorators(Throttle({ default: { limit: perMinute, ttl: RATE_LIMIT_TTL_MS } }), SetMetadata(RATE_LIMIT_PER_MINUTE, perMinute));

/** Public page endpoints, counted per client address: the guard takes the limit from PUBLIC_RATE_LIMIT. */
export const PublicRateLimit = () => Throttle({ default: { limit: 300, ttl: RATE_LIMIT_TTL_MS } });
