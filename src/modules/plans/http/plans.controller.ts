import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { BodyCheckGuard } from '../../../common/http/body';
import { UuidParamPipe } from '../../../common/http/uuid-param.pipe';
import { RateLimit } from '../../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../../common/rate-limit/rate-limit.guard';
import type { DashboardSession } from '../../dashboard/dashboard-auth.service';
import { DASHBOARD_CHANGES_PER_MINUTE, DashboardSessionGuard, SignedIn } from '../../dashboard/dashboard-session.guard';
import { IdempotencyKeyHeader } from '../../dashboard/dashboard.dto';
import { dashboardItem } from '../../dashboard/dashboard.mapper';
import { PlansService } from '../application/plans.service';
import type { Plan } from '../domain/plan';
import { CreatePlanDto, ListPlansQuery } from './plans.dto';
import { planJson } from './plans.mapper';
import { NoFields } from '../../../common/http/validation';

/** The signed-in merchant's plans (DESIGN §5): the dashboard's cookie, and its CSRF header on every change. */
@Controller('dashboard/api/plans')
@UseGuards(DashboardSessionGuard, BodyCheckGuard)
export class PlansController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly plans: PlansService) {}

  @Post()
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  async create(
    @SignedIn() s: DashboardSession,
    @Body() dto: CreatePlanDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { plan, created } = await this.plans.create(s.merchant, {
      title: dto.title,
      fiatAmount: dto.fiat_amount_int,
      fiatCurrencyCode: dto.fiat_currency_code,
      interval: dto.interval,
      intervalCount: dto.interval_count,
      startAt: dto.start_at === undefined ? undefined : new Date(dto.start_at),
      maxCharges: dto.max_charges,
      expiryMinutes: dto.expiry_minutes,
      payerName: dto.payer_name,
      payerEmail: dto.payer_email,
      metadata: dto.metadata,
    }, idempotencyKey);
    res.status(created ? 201 : 200);
    return this.body(plan);
  }

  @Get()
  async list(@SignedIn() s: DashboardSession, @Query() q: ListPlansQuery) {
    const page = await this.plans.list(s.merchant, q);
    return {
      ok: true,
      plans: page.items.map((p) => planJson(p, this.plans.planUrl(p))),
      has_more: page.hasMore,
      limit: page.limit,
      offset: page.offset,
    };
  }

  @Get(':id')
  async get(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string) {
    const p = await this.plans.get(s.merchant, id);
    const now = new Date();
    return { ...this.body(p), charges: (await this.plans.chargesOf(p)).map((r) => dashboardItem(r, this.config.payUrl, now)) };
  }

  @Post(':id/pause')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  @HttpCode(200)
  async pause(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    return this.body(await this.plans.pause(s.merchant, id));
  }

  @Post(':id/resume')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  @HttpCode(200)
  async resume(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    return this.body(await this.plans.resume(s.merchant, id));
  }

  @Post(':id/cancel')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  @HttpCode(200)
  async cancel(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    return this.body(await this.plans.cancel(s.merchant, id));
  }

  @Post(':id/advance')
  @UseGuards(RateLimitGuard)
  @RateLimit(DASHBOARD_CHANGES_PER_MINUTE)
  @HttpCode(200)
  async advance(@SignedIn() s: DashboardSession, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    return this.body(await this.plans.advance(s.merchant, id));
  }

  private body(p: Plan) {
    return { ok: true, ...planJson(p, this.plans.planUrl(p)) };
  }
}
