import { Controller, Get, Inject, Param, UseFilters, UseGuards, UseInterceptors } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { BodyCheckGuard } from '../../common/http/body';
import { toString as qrSvg } from 'qrcode';
import { AppError } from '../../common/errors';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { onboardingBody } from '../merchants/onboarding.mapper';
import { OnboardingService } from '../merchants/onboarding.service';
import { PlansService } from '../plans/application/plans.service';
import { RatesService } from '../rates/rates.service';
import { PayService } from '../requests/application/pay.service';
import { AssetStore } from './asset-store';
import { renderOnboardingPage, type OnboardingView } from './onboarding-page.view';
import { PageErrorFilter } from './page-error.filter';
import { PageHeaders } from './page-security';
import { renderPayPage, type PayView } from './pay-page.view';
import { renderPlanPage } from './plan-page.view';
import { renderTermsPage, TERMS } from './terms';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/**
 * The server-rendered pages (DESIGN §4), public port only. They read through the same services as their
 * JSON APIs and change nothing: the pay page's script reports the open (DESIGN §3), not this GET.
 */
@Controller()
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
@UseInterceptors(PageHeaders)
@UseFilters(PageErrorFilter)
export class PagesController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly plans: PlansService,
    private readonly pay: PayService,
    private readonly onboarding: OnboardingService,
    private readonly rates: RatesService,
    private readonly assets: AssetStore,
  ) {}

  @Get('pay/:id')
  async payPage(@Param('id', UuidParamPipe) id: string): Promise<string> {
    const view: PayView = await this.pay.view(id);
    const qr = await qrSvg(view.payment_uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
    return renderPayPage(view, qr, { stylesheet: this.assets.url('pages.css'), script: this.assets.url('pay.js') }, new Date());
  }

  /** The payer's plan page (DESIGN §5): the token in plan_url is the capability. */
  @Get('plan/:token')
  async planPage(@Param('token') token: string): Promise<string> {
    return renderPlanPage(await this.plans.payerView(token), this.config.payUrl, this.assets.url('pages.css'), new Date());
  }

  @Get('onboarding/:token')
  async onboardingPage(@Param('token') token: string): Promise<string> {
    const state: OnboardingView = onboardingBody(await this.onboarding.state(token));
    return renderOnboardingPage({
      token,
      state,
      currencies: this.rates.currencies(),
      termsUrl: `/terms/${encodeURIComponent(state.terms_version)}`,
      assets: { stylesheet: this.assets.url('pages.css'), script: this.assets.url('onboarding.js') },
    });
  }

  @Get('terms/:version')
  termsPage(@Param('version') version: string): string {
    if (!Object.hasOwn(TERMS, version)) throw AppError.notFound();
    return renderTermsPage(version, TERMS[version], this.assets.url('pages.css'));
  }
}
