import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { BodyCheckGuard } from '../../common/http/body';
import { clearCookie } from '../../common/http/cookies';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { sentMessageJson } from '../notifications/notifications.mapper';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { cannotCancelWith } from '../requests/application/requests.service';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { listQuery } from '../requests/http/request.dto';
import { DashboardAuthService, type DashboardSession } from './dashboard-auth.service';
import { DASHBOARD_CHANGES_PER_MINUTE, DASHBOARD_COOKIE, DashboardSessionGuard, SignedIn } from './dashboard-session.guard';
import { AssetsQuery, ClaimHandleDto, CreateDashboardRequestDto, DashboardListQuery, IdempotencyKeyHeader, UpdateMeDto } from './dashboard.dto';
import { CsvExports } from './csv-export';
import { assetsBody, CSV_HEADER, csvRows, dashboardItem, meBody } from './dashboard.mapper';
import { DashboardService } from './dashboard.service';
import { NoFields } from '../../common/http/validation';

/** CSV exports a minute per merchant (each reads every matching request). */
const DASHBOARD_EXPORTS_PER_MINUTE = 10;

/**
 * The signed-in merchant's API (DESIGN §5): cookie required, CSRF header on every change. The session guard
 * runs before the per-route RateLimitGuard, which therefore counts per merchant.
 */
@Controller('dashboard/api')
@UseGuards(DashboardSessionGuard, BodyCheckGuard)
export class DashboardController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly auth: DashboardAuthService,
    private readonly dashboard: DashboardService,
    private readonly exports: CsvExports,
  ) {}

  @Delete('session')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async signOut(@SignedIn() s: DashboardSession, @Res({ passthrough: true }) res: Response, @Body() _body: NoFields) {
    await this.auth.signOut(s);
    clearCookie(res, DASHBOARD_COOKIE, { secure: this.config.secureCookies, path: '/dashboard' });
    return { ok: true };
  }

  /**
   * The signed-in session: a page reloaded in a new tab recovers its CSRF token here (the cookie is HttpOnly;
   * a cross-site page cannot read a same-origin JSON answer).
   */
  @Get('session')
  session(@SignedIn() s: DashboardSession) {
    return { ok: true, merchant_id: s.merchant.id, csrf_token: s.csrfToken };
  }

  @Get('me')
  async me(@SignedIn() s: DashboardSession) {
    return meBody(await this.dashboard.settings(s.merchant));
  }

  @Patch('me')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async updateMe(@SignedIn() s: DashboardSession, @Body() dto: UpdateMeDto) {
    return meBody(await this.dashboard.updateSettings(s.merchant, dto));
  }

  @Put('handle')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async claimHandle(@SignedIn() s: DashboardSession, @Body() dto: ClaimHandleDto) {
    const { handle, handleUrl } = await this.dashboard.claimHandle(s.merchant, dto.handle);
    return { ok: true, handle, handle_url: handleUrl };
  }

  /**
   * How to read a request's `amount` (base units): symbol and decimals of the merchant's mode's asset, and of
   * the `asset_id` asked for when the chain module knows it (an asset no mode uses now). Items stay as DESIGN
   * §8 has them; the page reads the token from here.
   */
  @Get('assets')
  async assets(@SignedIn() s: DashboardSession, @Query() q: AssetsQuery) {
    return assetsBody(await this.dashboard.assets(s.merchant, q.asset_id));
  }

  @Get('requests')
  async list(@SignedIn() s: DashboardSession, @Query() q: DashboardListQuery) {
    const page = await this.dashboard.list(s.merchant, listQuery(q));
    const now = new Date();
    return {
      ok: true,
      requests: page.items.map((r) => dashboardItem(r, this.config.payUrl, now)),
      has_more: page.hasMore,
      limit: page.limit,
      offset: page.offset,
    };
  }

  /** Every request of the filters (limit and offset do not apply), as CSV (DESIGN §5, §8). */
  @Get('requests.csv')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_EXPORTS_PER_MINUTE)
  async csv(@SignedIn() s: DashboardSession, @Query() q: DashboardListQuery, @Res() res: Response): Promise<void> {
    const batches = this.dashboard.exportAll(s.merchant, { ...listQuery(q), limit: undefined, offset: undefined });
    await this.exports.stream(s.merchant.id, res, 'requests.csv', CSV_HEADER, csvRows(batches));
  }

  @Get('requests/:id')
  async get(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string) {
    const { request, notifications } = await this.dashboard.detail(s.merchant, id);
    return { ...dashboardItem(request, this.config.payUrl, new Date()), notifications: notifications.map(sentMessageJson) };
  }

  @Post('requests')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async create(
    @SignedIn() s: DashboardSession,
    @Body() dto: CreateDashboardRequestDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { request, created } = await this.dashboard.createRequest(s.merchant, dto, idempotencyKey);
    res.status(created ? 201 : 200);
    return dashboardItem(request, this.config.payUrl, new Date(), !created);
  }

  @Post('requests/:id/cancel')
  @HttpCode(200)
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async cancel(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    const view = (r: PaymentRequest) => dashboardItem(r, this.config.payUrl, new Date());
    return view(await this.dashboard.cancel(s.merchant, id).catch(cannotCancelWith(view)));
  }
}
