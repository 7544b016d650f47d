import { BodyCheckGuard } from '../../common/http/body';
import {
  All,
  Controller,
  createParamDecorator,
  type ExecutionContext,
  Get,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { AppError } from '../../common/errors';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { PageHeaders } from '../pages/page-security';
import { PortalAuthService } from './portal-auth.service';
import { PortalErrorFilter } from './portal-error.filter';
import { clearCookie, cookie, field, fieldValues, seeOther, sendPage, SESSION_COOKIE, type PortalRequest } from './portal-http';
import type { NavKey, Notice } from './portal-layout.view';
import {
  dashboardBody,
  deliveriesBody,
  deliveryBody,
  keyCreatedBody,
  keysBody,
  merchantsBody,
  accountBody,
  auditBody,
  ratesBody,
  secretBody,
  usersBody,
  webhookBody,
  type InviteForm,
  type KeyForm,
} from './portal-pages.view';
import { PortalRenderer } from './portal-renderer';
import { AdminRequired } from './portal-errors';
import { PortalSessionGuard } from './portal-session.guard';
import type { PortalSession } from './portal-sessions.service';
import { PAGE_SIZE, PortalService, type PingResult, type PortalActor } from './portal.service';
import { doneNotice, refusalNotice } from './portal-words';
import type { SafeHtml } from '../pages/html';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/** The signed-in user's session, attached by PortalSessionGuard. */
const Session = createParamDecorator((_: unknown, ctx: ExecutionContext): PortalSession => ctx.switchToHttp().getRequest<PortalRequest>().portal!);

/** The signed-in user as the audit trail records them: user, partner and client address. */
const Acting = createParamDecorator((_: unknown, ctx: ExecutionContext): PortalActor => {
  const req = ctx.switchToHttp().getRequest<PortalRequest>();
  return { kind: 'portal_user', userId: req.portal!.userId, partnerId: req.portal!.partnerId, address: req.ip ?? null };
});

/** User management is for the partner's admins; a member gets 403 in words before anything is read or done. */
function adminOnly(s: PortalSession): void {
  if (s.role !== 'admin') throw new AdminRequired();
}

function offsetOf(raw: unknown): number {
  return typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : 0;
}

/**
 * The signed-in portal: server-rendered pages, forms that POST and redirect (303) to a GET, and result
 * pages for the one-time secrets (a new API key, a webhook secret), which are never stored to be shown
 * again. Every POST passed the session's CSRF check in the guard before it gets here.
 */
@Controller('portal')
@UseGuards(RateLimitGuard, PortalSessionGuard, BodyCheckGuard)
@PublicRateLimit()
@UseInterceptors(PageHeaders)
@UseFilters(PortalErrorFilter)
export class PortalController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly portal: PortalService,
    private readonly auth: PortalAuthService,
    private readonly renderer: PortalRenderer,
  ) {}

  private page(res: Response, status: number, s: PortalSession, current: NavKey | undefined, title: string, body: SafeHtml): void {
    sendPage(res, status, this.renderer.page({ title, pageId: `portal-${current ?? 'result'}`, session: s, current, body }));
  }

  // ---- overview and sign-out

  @Get()
  async dashboard(@Session() s: PortalSession, @Res() res: Response): Promise<void> {
    const [keys, webhook, deliveries, test, live] = await Promise.all([
      this.portal.keys(s.partnerId),
      this.portal.webhookStatus(s.partnerId),
      this.portal.deliveriesPage(s.partnerId, 0),
      this.portal.merchantsPage(s.partnerId, 'test', 0),
      this.portal.merchantsPage(s.partnerId, 'live', 0),
    ]);
    this.page(res, 200, s, 'dashboard', 'Overview', dashboardBody(s, {
      keys,
      webhook,
      deliveries: deliveries.deliveries.slice(0, 5),
      merchants: { test: test.merchants.length, live: live.merchants.length, testMore: test.hasMore, liveMore: live.hasMore },
      rates: this.portal.currentRates(),
    }));
  }

  @Post('logout')
  async logout(@Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    await this.auth.signOut(cookie(req, SESSION_COOKIE));
    clearCookie(res, SESSION_COOKIE, { secure: this.config.secureCookies, path: '/portal' });
    seeOther(res, '/portal/login?done=signed-out');
  }

  // ---- API keys

  @Get('keys')
  async keys(@Session() s: PortalSession, @Res() res: Response, @Query('done') done?: string): Promise<void> {
    await this.keysPage(res, 200, s, { notice: doneNotice(done) });
  }

  @Post('keys')
  async createKey(@Session() s: PortalSession, @Acting() a: PortalActor, @Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    const form: KeyForm = { mode: field(req.body, 'mode'), scopes: fieldValues(req.body, 'scopes'), label: field(req.body, 'label') };
    const r = await this.portal.createKey(a, { mode: form.mode, scopes: form.scopes ?? [], label: form.label });
    if (!r.ok) return this.keysPage(res, r.refusal.status, s, { notice: refusalNotice('keys', r.refusal), form });
    this.page(res, 201, s, 'keys', 'New API key', keyCreatedBody(r.value));
  }

  @Post('keys/:keyId/revoke')
  async revokeKey(@Acting() a: PortalActor, @Param('keyId', UuidParamPipe) keyId: string, @Res() res: Response): Promise<void> {
    await this.portal.revokeKey(a, keyId);
    seeOther(res, '/portal/keys?done=key-revoked');
  }

  private async keysPage(res: Response, status: number, s: PortalSession, o: { notice?: Notice; form?: KeyForm }): Promise<void> {
    this.page(res, status, s, 'keys', 'API keys', keysBody(s, await this.portal.keys(s.partnerId), o));
  }

  // ---- webhooks

  @Get('webhook')
  async webhook(@Session() s: PortalSession, @Res() res: Response, @Query('done') done?: string): Promise<void> {
    await this.webhookPage(res, 200, s, { notice: doneNotice(done) });
  }

  @Post('webhook')
  async saveWebhook(@Session() s: PortalSession, @Acting() a: PortalActor, @Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    const url = field(req.body, 'url') ?? '';
    const enabled = field(req.body, 'enabled') === 'on';
    const r = await this.portal.configureWebhook(a, { url, enabled });
    if (!r.ok) return this.webhookPage(res, r.refusal.status, s, { notice: refusalNotice('webhook', r.refusal), urlInput: url, enabledInput: enabled });
    if (r.value.secret) return this.page(res, 200, s, 'webhook', 'Webhook secret', secretBody(s, r.value.secret, 'generated'));
    seeOther(res, '/portal/webhook?done=webhook-saved');
  }

  @Post('webhook/rotate')
  async rotate(@Session() s: PortalSession, @Acting() a: PortalActor, @Res() res: Response): Promise<void> {
    const r = await this.portal.rotateSecret(a);
    if (!r.ok) return this.webhookPage(res, r.refusal.status, s, { notice: refusalNotice('rotate', r.refusal) });
    this.page(res, 200, s, 'webhook', 'New webhook secret', secretBody(s, r.value, 'rotated'));
  }

  @Post('webhook/confirm-rotation')
  async confirmRotation(@Session() s: PortalSession, @Acting() a: PortalActor, @Res() res: Response): Promise<void> {
    const r = await this.portal.confirmRotation(a);
    if (!r.ok) return this.webhookPage(res, r.refusal.status, s, { notice: refusalNotice('confirm', r.refusal) });
    seeOther(res, '/portal/webhook?done=rotation-confirmed');
  }

  /** The ping's answer is shown on the page this POST returns; nothing is stored, so there is nothing to redirect to. */
  @Post('webhook/test')
  async sendTest(@Session() s: PortalSession, @Res() res: Response): Promise<void> {
    const r = await this.portal.ping(s.partnerId);
    if (!r.ok) return this.webhookPage(res, r.refusal.status, s, { notice: refusalNotice('ping', r.refusal) });
    await this.webhookPage(res, 200, s, { ping: r.value });
  }

  private async webhookPage(
    res: Response,
    status: number,
    s: PortalSession,
    o: { notice?: Notice; urlInput?: string; enabledInput?: boolean; ping?: PingResult },
  ): Promise<void> {
    const [w, recent] = await Promise.all([this.portal.webhookStatus(s.partnerId), this.portal.deliveriesPage(s.partnerId, 0)]);
    this.page(res, status, s, 'webhook', 'Webhooks', webhookBody(s, w, recent.deliveries.slice(0, 10), o));
  }

  // ---- deliveries

  @Get('deliveries')
  async deliveries(@Session() s: PortalSession, @Res() res: Response, @Query('offset') offset?: string, @Query('done') done?: string): Promise<void> {
    const at = offsetOf(offset);
    const p = await this.portal.deliveriesPage(s.partnerId, at);
    this.page(res, 200, s, 'deliveries', 'Deliveries', deliveriesBody(s, p.deliveries, { offset: at, hasMore: p.hasMore, pageSize: PAGE_SIZE, notice: doneNotice(done) }));
  }

  @Get('deliveries/:deliveryId')
  async delivery(@Session() s: PortalSession, @Param('deliveryId', UuidParamPipe) id: string, @Res() res: Response, @Query('done') done?: string): Promise<void> {
    await this.deliveryPage(res, 200, s, id, doneNotice(done));
  }

  @Post('deliveries/:deliveryId/redeliver')
  async redeliver(@Session() s: PortalSession, @Acting() a: PortalActor, @Param('deliveryId', UuidParamPipe) id: string, @Res() res: Response): Promise<void> {
    const r = await this.portal.redeliver(a, id);
    if (!r.ok) return this.deliveryPage(res, r.refusal.status, s, id, refusalNotice('redeliver', r.refusal));
    seeOther(res, `/portal/deliveries/${encodeURIComponent(id)}?done=redelivery-queued`);
  }

  private async deliveryPage(res: Response, status: number, s: PortalSession, id: string, notice?: Notice): Promise<void> {
    const d = await this.portal.delivery(s.partnerId, id);
    this.page(res, status, s, 'deliveries', 'Delivery', deliveryBody(s, d.delivery, d.attempts, notice));
  }

  // ---- rates

  @Get('rates')
  rates(@Session() s: PortalSession, @Res() res: Response, @Query('done') done?: string): void {
    this.page(res, 200, s, 'rates', 'Rates', ratesBody(s, this.portal.currentRates(), doneNotice(done)));
  }

  @Post('rates/refresh')
  async refreshRates(@Session() s: PortalSession, @Acting() a: PortalActor, @Res() res: Response): Promise<void> {
    const r = await this.portal.refreshRates(a);
    if (!r.ok) return this.page(res, r.refusal.status, s, 'rates', 'Rates', ratesBody(s, this.portal.currentRates(), refusalNotice('rates', r.refusal)));
    seeOther(res, '/portal/rates?done=rates-refreshed');
  }

  // ---- merchants

  @Get('merchants')
  async merchants(@Session() s: PortalSession, @Res() res: Response, @Query('mode') modeParam?: string, @Query('offset') offset?: string): Promise<void> {
    const mode: Mode = modeParam === 'live' ? 'live' : 'test';
    const at = offsetOf(offset);
    const p = await this.portal.merchantsPage(s.partnerId, mode, at);
    this.page(res, 200, s, 'merchants', 'Merchants', merchantsBody(mode, p.merchants, { offset: at, hasMore: p.hasMore, pageSize: PAGE_SIZE }));
  }

  // ---- your account

  @Get('account')
  account(@Session() s: PortalSession, @Res() res: Response, @Query('done') done?: string): void {
    this.page(res, 200, s, 'account', 'Your account', accountBody(s, doneNotice(done)));
  }

  @Post('account/password')
  async changePassword(@Session() s: PortalSession, @Acting() a: PortalActor, @Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    const r = await this.portal.changePassword(s, a, {
      current: field(req.body, 'current_password'),
      next: field(req.body, 'new_password'),
      repeat: field(req.body, 'new_password_repeat'),
    });
    if (!r.ok) return this.page(res, r.refusal.status, s, 'account', 'Your account', accountBody(s, refusalNotice('password', r.refusal)));
    seeOther(res, '/portal/account?done=password-changed');
  }

  // ---- users (the partner's admins only)

  @Get('users')
  async users(@Session() s: PortalSession, @Res() res: Response, @Query('done') done?: string): Promise<void> {
    await this.usersPage(res, 200, s, { notice: doneNotice(done) });
  }

  @Post('users')
  async invite(@Session() s: PortalSession, @Acting() a: PortalActor, @Req() req: PortalRequest, @Res() res: Response): Promise<void> {
    adminOnly(s);
    const form = { email: field(req.body, 'email'), role: field(req.body, 'role') };
    const r = await this.portal.invite(a, { ...form, password: field(req.body, 'password') });
    if (!r.ok) return this.usersPage(res, r.refusal.status, s, { notice: refusalNotice('invite', r.refusal), form });
    seeOther(res, '/portal/users?done=user-invited');
  }

  @Post('users/:userId/remove')
  async removeUser(@Session() s: PortalSession, @Acting() a: PortalActor, @Param('userId', UuidParamPipe) userId: string, @Res() res: Response): Promise<void> {
    adminOnly(s);
    const r = await this.portal.removeUser(a, userId);
    if (!r.ok) return this.usersPage(res, r.refusal.status, s, { notice: refusalNotice('remove', r.refusal) });
    seeOther(res, '/portal/users?done=user-removed');
  }

  @Post('users/:userId/role')
  async setRole(
    @Session() s: PortalSession,
    @Acting() a: PortalActor,
    @Param('userId', UuidParamPipe) userId: string,
    @Req() req: PortalRequest,
    @Res() res: Response,
  ): Promise<void> {
    adminOnly(s);
    const r = await this.portal.setRole(a, userId, field(req.body, 'role'));
    if (!r.ok) return this.usersPage(res, r.refusal.status, s, { notice: refusalNotice('role', r.refusal) });
    // Demoting yourself ends your access to this page: go to your account instead.
    seeOther(res, userId === s.userId && field(req.body, 'role') === 'member' ? '/portal/account?done=role-changed' : '/portal/users?done=role-changed');
  }

  private async usersPage(res: Response, status: number, s: PortalSession, o: { notice?: Notice; form?: InviteForm }): Promise<void> {
    adminOnly(s);
    this.page(res, status, s, 'users', 'Users', usersBody(s, await this.portal.usersOf(s.partnerId), o));
  }

  // ---- audit trail (the partner's admins only)

  @Get('audit')
  async audit(@Session() s: PortalSession, @Res() res: Response, @Query('offset') offset?: string): Promise<void> {
    adminOnly(s);
    const at = offsetOf(offset);
    const [p, users] = await Promise.all([this.portal.auditPage(s.partnerId, at), this.portal.usersOf(s.partnerId)]);
    const emails = new Map(users.map((u) => [u.id, u.email]));
    this.page(res, 200, s, 'audit', 'Audit log', auditBody(p.events, emails, { offset: at, hasMore: p.hasMore, pageSize: PAGE_SIZE }));
  }

  /** Anything else under /portal: the portal's own 404 page (after the session check, like every page). */
  @All('*rest')
  notFound(): never {
    throw AppError.notFound();
  }
}
