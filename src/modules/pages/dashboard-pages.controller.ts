import { Controller, Get, Inject, Param, UseFilters, UseGuards, UseInterceptors } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { AppError } from '../../common/errors';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MerchantHandlesService } from '../merchants/merchant-handles.service';
import { RatesService } from '../rates/rates.service';
import { AssetStore } from './asset-store';
import { renderDashboardPage, renderHandlePage, type DashboardPage } from './dashboard-pages.view';
import { PageErrorFilter } from './page-error.filter';
import { PageHeaders } from './page-security';

/**
 * The merchant dashboard's pages and the public handle page (DESIGN §5), public port only. They are shells:
 * their scripts read and change everything through /dashboard/api and /m/api, which check the session.
 * Routes are listed one by one (no wildcard), so none of them can shadow a /dashboard/api route.
 */
@Controller()
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
@UseInterceptors(PageHeaders)
@UseFilters(PageErrorFilter)
export class DashboardPagesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly rates: RatesService,
    private readonly assets: AssetStore,
    private readonly handles: MerchantHandlesService,
  ) {}

  private page(page: DashboardPage, requestId?: string, planId?: string): string {
    return renderDashboardPage({
      page,
      requestId,
      planId,
      assets: { stylesheet: this.assets.url('dashboard.css'), script: this.assets.url('dashboard.js') },
      signIn: { domain: new URL(this.config.publicUrl).host, uri: `${this.config.publicUrl}/dashboard` },
      currencies: this.rates.currencies(),
    });
  }

  @Get('dashboard')
  home(): string {
    return this.page('home');
  }

  @Get('dashboard/sign-in')
  signIn(): string {
    return this.page('sign-in');
  }

  @Get('dashboard/requests')
  requests(): string {
    return this.page('requests');
  }

  // Declared before requests/:id, which would otherwise take "new" for an id.
  @Get('dashboard/requests/new')
  newRequest(): string {
    return this.page('new-request');
  }

  @Get('dashboard/requests/:id')
  request(@Param('id', UuidParamPipe) id: string): string {
    return this.page('request', id);
  }

  @Get('dashboard/settings')
  settings(): string {
    return this.page('settings');
  }

  @Get('dashboard/handle')
  handle(): string {
    return this.page('handle');
  }

  @Get('dashboard/plans')
  plans(): string {
    return this.page('plans');
  }

  // Declared before plans/:id, which would otherwise take "new" for an id.
  @Get('dashboard/plans/new')
  newPlan(): string {
    return this.page('new-plan');
  }

  @Get('dashboard/plans/:id')
  plan(@Param('id', UuidParamPipe) id: string): string {
    return this.page('plan', undefined, id);
  }

  /** An unknown or retired handle is a 404 page (DESIGN §8); the script reads the rest from /m/api. */
  @Get('m/:handle')
  async handlePage(@Param('handle') handle: string): Promise<string> {
    if (!(await this.handles.merchantOf(handle))) throw AppError.notFound();
    return renderHandlePage(handle.toLowerCase(), { stylesheet: this.assets.url('dashboard.css'), script: this.assets.url('handle.js') });
  }
}
