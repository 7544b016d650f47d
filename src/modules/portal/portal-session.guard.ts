import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { AppError } from '../../common/errors';
import type { ParsedRequest } from '../../common/http/body';
import { CSRF_FIELD, cookie, field, SESSION_COOKIE, type PortalRequest } from './portal-http';
import { CsrfRejected, SignInRequired } from './portal-errors';
import { PortalSessionsService, sameToken } from './portal-sessions.service';

/**
 * Every signed-in portal route: resolves the session cookie (Postgres, so any instance serves it) and, for
 * anything but GET/HEAD, checks the form's CSRF token against the session's before the handler runs.
 */
@Injectable()
export class PortalSessionGuard implements CanActivate {
  constructor(private readonly sessions: PortalSessionsService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<PortalRequest & ParsedRequest>();
    const session = await this.sessions.resolve(cookie(req, SESSION_COOKIE));
    if (!session) throw new SignInRequired();
    // A body that is not a form (JSON, text, multipart) is not read, so it carries no token either: 415 says so.
    if (req.bodyProblem === 'unsupported_media_type') throw new AppError('unsupported_media_type');
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sameToken(field(req.body, CSRF_FIELD), session.csrfToken)) {
      throw new CsrfRejected();
    }
    req.portal = session;
    return true;
  }
}
