import { Controller, Get, Inject, Param, UseGuards } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { BodyCheckGuard } from '../../../common/http/body';
import { PublicRateLimit } from '../../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../../common/rate-limit/rate-limit.guard';
import { PlansService } from '../application/plans.service';
import { payerJson } from './plans.mapper';

/** The payer's plan API (DESIGN §5): public, the token is the capability; limited per client address. */
@Controller('plan/api')
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
export class PayerPlanController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly plans: PlansService) {}

  @Get(':token')
  async view(@Param('token') token: string) {
    return payerJson(await this.plans.payerView(token), this.config.payUrl, new Date());
  }
}
