import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { AppError } from '../../common/errors';
import { actorGone } from '../audit/audit';
import { setPageHeaders } from '../pages/page-security';
import { seeOther, type PortalRequest } from './portal-http';
import { problemBody } from './portal-pages.view';
import { PortalRenderer } from './portal-renderer';
import { AdminRequired, CsrfRejected, SignInRequired } from './portal-errors';

interface Words {
  title: string;
  detail: string;
}

const ADMINS_ONLY: Words = {
  title: 'Only admins can manage users',
  detail: 'You are not an admin of this portal (your role is member, or it changed while you were working). Ask one of your account’s admins to add, remove or change users. Nothing was changed.',
};

function words(status: number, path: string, signedIn: boolean): Words {
  switch (status) {
    case 400:
      return { title: 'That form could not be read', detail: 'Reload the page and try again.' };
    case 403:
      return {
        title: 'This form has expired',
        detail: 'The page was open too long, or it came from somewhere else. Nothing was changed. Reload the page and try again.',
      };
    case 404:
      return { title: 'Not found', detail: 'There is nothing at this address in your portal.' };
    case 413:
      return { title: 'Too much data', detail: 'The form sent more than the portal accepts. Nothing was changed.' };
    case 415:
      return { title: 'Only forms are accepted', detail: 'The portal reads its own HTML forms, not JSON or other bodies. Nothing was changed.' };
    case 429:
      return path.startsWith('/portal/login')
        ? { title: 'Too many sign-in attempts', detail: 'Sign-in is paused for this address or account. Wait a minute, then try again.' }
        : { title: 'Too many requests', detail: 'Wait a minute, then reload the page.' };
    default:
      return {
        title: 'Something went wrong',
        detail: signedIn ? 'Nothing is lost: reload the page in a moment.' : 'Please try again in a moment.',
      };
  }
}

/**
 * The portal's failures as pages in its layout: no session, or no user any more → the sign-in page (303); a
 * CSRF mismatch → 403; the API's errors → their status with words for a person. Unexpected errors are logged
 * with the request id, as in the API.
 */
@Catch()
export class PortalErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Portal');

  constructor(private readonly renderer: PortalRenderer) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<PortalRequest & { id?: string }>();
    if (res.headersSent) return;
    setPageHeaders(res);
    // A user removed while their change was on its way: the change was refused where it was recorded.
    if (exception instanceof SignInRequired || actorGone(exception)) {
      seeOther(res, '/portal/login');
      return;
    }
    let status = 500;
    if (exception instanceof CsrfRejected || exception instanceof AdminRequired) status = 403;
    else if (exception instanceof AppError) status = exception.status;
    else if (exception instanceof HttpException) status = exception.getStatus();
    if (status >= 500) {
      // The request id as a field of its own, like every line logged while serving a request (no log context).
      this.logger.error(
        { reqId: req.id, err: exception },
        `request ${req.id ?? '-'} ${req.method} ${req.path} failed: ${(exception as Error)?.message ?? String(exception)}`,
      );
    }
    const session = req.portal;
    const w = exception instanceof AdminRequired ? ADMINS_ONLY : words(status, req.path.toLowerCase(), !!session);
    const back = session ? { href: '/portal', label: 'Back to the overview' } : { href: '/portal/login', label: 'Go to sign-in' };
    res.status(status).send(
      this.renderer.page({
        title: w.title,
        pageId: 'portal-problem',
        session,
        body: problemBody({ ...w, back, reference: status >= 500 ? req.id : undefined }),
      }),
    );
  }
}
