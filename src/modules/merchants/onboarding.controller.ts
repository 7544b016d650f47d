import { Body, Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { CompleteOnboardingDto, WalletProofDto } from './onboarding.dto';
import { onboardingBody, onboardingCompleteBody } from './onboarding.mapper';
import { OnboardingService } from './onboarding.service';

/** DESIGN §4 onboarding endpoints (public port, no API key, limited per client address). */
@Controller('onboarding/api')
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
export class OnboardingController {
  constructor(private readonly onboarding: OnboardingService) {}

  @Get(':token')
  async state(@Param('token') token: string) {
    return onboardingBody(await this.onboarding.state(token));
  }

  @Post(':token/wallet')
  @HttpCode(200)
  async wallet(@Param('token') token: string, @Body() dto: WalletProofDto) {
    return onboardingBody(await this.onboarding.proveWallet(token, dto));
  }

  @Post(':token/complete')
  @HttpCode(200)
  async complete(@Param('token') token: string, @Body() dto: CompleteOnboardingDto) {
    return onboardingCompleteBody(await this.onboarding.complete(token, dto));
  }
}
