import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { getOptionsToken, ThrottlerGuard, ThrottlerStorage, type ThrottlerModuleOptions, type ThrottlerRequest } from '@nestjs/throttler';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../errors';
import { addressBucket } from './client-address';
import { endpointBucket, scaledLimit } from './rate-limit';

/**
 * Per API key (per merchant on the signed-in dashboard; per client address on the public pages: IPv6 by /64),
 * per endpoint, per clock minute (spec §8).
 * The key names the controller method, not the path: the accounts alias and case or trailing-slash
 * variants of a path reach the same method and so share its bucket. No rate-limit headers (§8).
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @Inject(getOptionsToken()) options: ThrottlerModuleOptions,
    @Inject(ThrottlerStorage) storage: ThrottlerStorage,
    reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const req = props.context.switchToHttp().getRequest<{ principal?: unknown; dashboard?: unknown }>();
    const base = req.principal || req.dashboard ? props.limit : this.config.publicRateLimit;
    const limit = scaledLimit(base, this.config.rateLimitScale);
    return super.handleRequest({ ...props, limit });
  }

  protected override async getTracker(req: Record<string, any>): Promise<string> {
    if (req.principal) return `key:${req.principal.keyId}`;
    // A signed-in dashboard call (DashboardSessionGuard ran first): counted per merchant, whichever session.
    if (req.dashboard) return `merchant:${req.dashboard.merchant.id}`;
    return `ip:${addressBucket(req.ip)}`;
  }

  protected override generateKey(context: ExecutionContext, tracker: string): string {
    return endpointBucket(context.getClass().name, context.getHandler().name, tracker);
  }

  protected override async throwThrottlingException(): Promise<void> {
    throw new AppError('rate_limited');
  }
}
