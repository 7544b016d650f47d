import express, { type NextFunction, type Request, type Response } from 'express';
import type { ParsedRequest } from '../../common/http/body';
import { hasBody, MAX_BODY, mediaType, textErrors } from '../../common/http/body';
import type { PortalSession } from './portal-sessions.service';

/** The session cookie: HttpOnly, SameSite=Lax, scoped to /portal, Secure when the service is served over https. */
export const SESSION_COOKIE = 'prs_portal';
/** Before sign-in there is no session to hold a CSRF token: the login form's token is double-submitted in this cookie. */
export const LOGIN_COOKIE = 'prs_portal_login';
export const CSRF_FIELD = '_csrf';

export interface PortalRequest extends Request {
  portal?: PortalSession;
}

export { clearCookie, cookie, setCookie } from '../../common/http/cookies';

/** POST-redirect-GET: 303, so the browser follows with a GET and a reload does not repeat the action. */
export function seeOther(res: Response, location: string): void {
  res.status(303).setHeader('Location', location);
  res.end();
}

export function sendPage(res: Response, status: number, page: string): void {
  res.status(status).send(page);
}

const formParser = express.urlencoded({ extended: false, limit: MAX_BODY, parameterLimit: 50 });

/**
 * The portal's HTML forms post application/x-www-form-urlencoded, which the API's JSON-only body parser
 * would refuse. Mounted on /portal ahead of it; a parse failure is deferred the same way (bodyProblem), and
 * the JSON parser leaves /portal alone. Text Postgres cannot store as sent (a NUL, a lone surrogate: see
 * textErrors) makes the form unreadable too, as it makes a JSON body invalid; the fields stay, so the
 * session's CSRF check still reads its token and the 400 comes from BodyCheckGuard. A body of any other type
 * (JSON, text, multipart) is not read: 415 (it used to be read as JSON, past the text check: a NUL in a key's
 * label was a 500).
 */
export function portalFormBody(req: Request & ParsedRequest, res: Response, next: NextFunction): void {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  formParser(req, res, (err?: { type?: string }) => {
    if (err) {
      req.bodyProblem = err.type === 'entity.too.large' ? 'payload_too_large' : 'invalid_json';
      req.body = undefined;
    } else if (hasBody(req) && mediaType(req) !== 'application/x-www-form-urlencoded') {
      req.bodyProblem = 'unsupported_media_type';
      req.body = undefined;
    } else if (textErrors(req.body).length > 0) {
      req.bodyProblem = 'invalid_json';
    }
    next();
  });
}

/** One text field of a parsed form: a string, or undefined when missing or repeated. */
export function field(body: unknown, name: string): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const v = Object.hasOwn(body, name) ? (body as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** Every value of a field that may repeat (checkboxes of one name). */
export function fieldValues(body: unknown, name: string): string[] {
  if (body === null || typeof body !== 'object' || !Object.hasOwn(body, name)) return [];
  const v = (body as Record<string, unknown>)[name];
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
