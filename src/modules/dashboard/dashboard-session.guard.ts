import { createParamDecorator, type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { sameToken } from '../../common/crypto/session-token';
import { AppError } from '../../common/errors';
import { cookie } from '../../common/http/cookies';
import { DashboardAuthService, type DashboardSession } from './dashboard-auth.service';

/** The dashboard's session cookie: HttpOnly, SameSite=Lax, Path=/dashboard, Secure over https (DESIGN §5). */
export const DASHBOARD_COOKIE = 'prs_dashboard';
export const CSRF_HEADER = 'x-csrf-token';

/**
 * Calls a minute per merchant (whichever of its sessions) on each signed-in route that changes something
 * (with @UseGuards(RateLimitGuard) after this guard, so the limiter counts per merchant); reads are not
 * limited. RATE_LIMIT_SCALE applies as everywhere.
 */
export const DASHBOARD_CHANGES_PER_MINUTE = 60;

export interface DashboardRequest extends Request {
  dashboard?: DashboardSession;
}

/**
 * Every signed-in dashboard route (the plans module's too): the session cookie → the merchant, else 401
 * unauthorized; anything but GET/HEAD also needs the session's CSRF token in `x-csrf-token`, else 403
 * csrf_failed. Put it before BodyCheckGuard, so a caller without a session learns nothing about its body.
 */
@Injectable()
export class DashboardSessionGuard implements CanActivate {
  constructor(private readonly auth: DashboardAuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<DashboardRequest>();
    const session = await this.auth.resolve(cookie(req, DASHBOARD_COOKIE));
    if (!session) throw new AppError('unauthorized');
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sameToken(req.headers[CSRF_HEADER], session.csrfToken)) {
      throw new AppError('csrf_failed');
    }
    req.dashboard = session;
    return true;
  }
}

/** The signed-in session (and its merchant) of a route behind DashboardSessionGuard. */
export const SignedIn = createParamDecorator((_: unknown, ctx: ExecutionContext): DashboardSession => {
  const session = ctx.switchToHttp().getRequest<DashboardRequest>().dashboard;
  if (!session) throw new Error('SignedIn used on a route without DashboardSessionGuard');
  return session;
});
