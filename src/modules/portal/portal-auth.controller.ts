import { Controller, Get, Inject, Post, Query, Req, Res, UseFilters, UseGuards, UseInterceptors } from '@nestjs/common';
import { BodyCheckGuard, raiseBodyProblem, type ParsedRequest } from '../../common/http/body';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { PageHeaders } from '../pages/page-security';
import { PortalAuthService } from './portal-auth.service';
import { PortalErrorFilter } from './portal-error.filter';
import {
  clearCookie,
  cookie,
  CSRF_FIELD,
  field,
  LOGIN_COOKIE,
  seeOther,
  sendPage,
  SESSION_COOKIE,
  setCookie,
  type PortalRequest,
} from './portal-http';
import type { Notice } from './portal-layout.view';
import { loginBody } from './portal-pages.view';
import { PortalRenderer } from './portal-renderer';
import { CsrfRejected } from './portal-errors';
import { PortalSessionsService, randomToken, sameToken, SESSION_TTL_MS } from './portal-sessions.service';
import { PORTAL_CSS, PORTAL_CSS_VERSION } from './portal-style';
import { doneNotice } from './portal-words';

const LOGIN_TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
/** One message for a wrong password and an unknown email alike: the page must not tell which emails exist. */
const SIGN_IN_FAILED: Notice = { kind: 'error', text: 'Email or password is incorrect.' };

/** Sign-in (public) and the portal's stylesheet. Everything else of the portal needs a session. */
@Controller('portal')
@UseInterceptors(PageHeaders)
@UseFilters(PortalErrorFilter)
export class PortalAuthController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly auth: PortalAuthService,
    private readonly sessions: PortalSessionsService,
    private readonly renderer: PortalRenderer,
  ) {}


  @Get('login')
  @UseGuards(RateLimitGuard, BodyCheckGuard)
  @PublicRateLimit()
  async loginPage(@Req() req: PortalRequest, @Res() res: Response, @Query('done') done?: string): Promise<void> {
    if (await this.sessions.resolve(cookie(req, SESSION_COOKIE))) return seeOther(res, '/portal');
    const csrf = this.loginToken(req, res);
    sendPage(res, 200, this.loginDocument(csrf, undefined, doneNotice(done)));
  }

  @Post('login')
  async login(@Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    // Login CSRF: the form's token must repeat the one this browser got with the form (double submit).
    const expected = cookie(req, LOGIN_COOKIE);
    if (!expected || !LOGIN_TOKEN_SHAPE.test(expected) || !sameToken(field(req.body, CSRF_FIELD), expected)) throw new CsrfRejected();
    // A field Postgres cannot store (a NUL in the email): 400, before any counter or lookup sees it.
    raiseBodyProblem(req as ParsedRequest);
    const email = field(req.body, 'email');
    const signedIn = await this.auth.signIn(req.ip ?? 'unknown', email, field(req.body, 'password'), req.id);
    if (!signedIn) return sendPage(res, 401, this.loginDocument(expected, email, SIGN_IN_FAILED));
    // A new session on every sign-in (no fixation); the browser's previous one, if any, ends.
    await this.auth.signOut(cookie(req, SESSION_COOKIE));
    setCookie(res, SESSION_COOKIE, signedIn.token, { secure: this.config.secureCookies, path: '/portal', maxAgeMs: SESSION_TTL_MS });
    clearCookie(res, LOGIN_COOKIE, { secure: this.config.secureCookies, path: '/portal/login' });
    seeOther(res, '/portal');
  }

  @Get('assets/portal.css')
  stylesheet(@Res() res: Response, @Query('v') version?: string): void {
    res.setHeader('Content-Type', 'text/css; charset=utf-8');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', version === PORTAL_CSS_VERSION ? 'public, max-age=31536000, immutable' : 'no-cache');
    res.send(PORTAL_CSS);
  }

  private loginDocument(csrf: string, email: string | undefined, notice: Notice | undefined): string {
    return this.renderer.page({ title: 'Sign in', pageId: 'portal-login', body: loginBody({ csrf, email, notice }) });
  }

  /** The browser's pre-session CSRF token: kept while it looks like ours, else a new one. */
  private loginToken(req: PortalRequest, res: Response): string {
    const current = cookie(req, LOGIN_COOKIE);
    if (current && LOGIN_TOKEN_SHAPE.test(current)) return current;
    const token = randomToken();
    setCookie(res, LOGIN_COOKIE, token, { secure: this.config.secureCookies, path: '/portal/login' });
    return token;
  }
}
