import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { CSRF_FIELD, cookie, field, SESSION_COOKIE, type PortalRequest } from './portal-http';
import { PortalSessionsService, sameToken } from './portal-sessions.service';

/** No live session: the portal's filter answers with a redirect to the sign-in page. */
export class SignInRequired extends Error {
  constructor() {
    super('sign-in required');
  }
}

/** A POST whose form token does not match the session's: 403, nothing done. */
export class CsrfRejected extends Error {
  constructor() {
    super('CSRF token missing or wrong');
  }
}

/** A member on an admin's page (user management): 403 in words, nothing done. */
export class AdminRequired extends Error {
  constructor() {
    super('admin role required');
  }
}

/**
 * Every signed-in portal route: resolves the session cookie (Postgres, so any instance serves it) and, for
 * anything but GET/HEAD, checks the form's CSRF token against the session's before the handler runs.
 */
@Injectable()
export class PortalSessionGuard implements CanActivate {
  constructor(private readonly sessions: PortalSessionsService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<PortalRequest>();
    const session = await this.sessions.resolve(cookie(req, SESSION_COOKIE));
    if (!session) throw new SignInRequired();
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sameToken(field(req.body, CSRF_FIELD), session.csrfToken)) {
      throw new CsrfRejected();
    }
    req.portal = session;
    return true;
  }
}
