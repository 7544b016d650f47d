import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { addressBucket } from '../../common/rate-limit/client-address';
import type { AuthFailureLimiter } from '../auth/auth-failure.limiter';
import { AdminAuthFailureLimiter } from './admin-auth-failure.limiter';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** What an admin credentials check needs of the failure budget (AdminAuthFailureLimiter). */
export type AdminAuthFailures = Pick<AuthFailureLimiter, 'refuseIfBlocked' | 'refuseIfOverBudget' | 'record'>;

/**
 * The client an admin failure is counted against: the admin listener's TCP peer, never a forwarded header,
 * which the caller writes itself (the audit trail names operators by the same address).
 */
export function adminClient(req: Pick<Request, 'socket'>): string {
  return addressBucket(req.socket?.remoteAddress);
}

/**
 * Bearer ADMIN_TOKEN, compared in constant time. The admin listener alone routes here (see bootstrap).
 * An address past its budget of wrong credentials gets 429 rate_limited before its token is compared, the
 * right token included, as the partner API does: otherwise guessing would go on, each right guess still let
 * in. A call without credentials guesses nothing and is not counted.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer;
  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Inject(AdminAuthFailureLimiter) private readonly failures: AdminAuthFailures,
  ) {
    this.expected = digest(config.adminToken);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    const address = adminClient(req);
    this.failures.refuseIfBlocked(address);
    await this.failures.refuseIfOverBudget(address);
    const header = req.headers.authorization;
    const m = header ? /^Bearer (.+)$/i.exec(header) : null;
    if (!m || !timingSafeEqual(digest(m[1]), this.expected)) {
      if (header !== undefined) await this.failures.record(address);
      throw new AppError('unauthorized');
    }
    return true;
  }
}
