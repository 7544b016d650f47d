import { Body, Controller, Get, HttpCode, Inject, Post, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { BodyCheckGuard } from '../../common/http/body';
import { setCookie } from '../../common/http/cookies';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { DashboardAuthService, SESSION_TTL_MS } from './dashboard-auth.service';
import { DASHBOARD_COOKIE } from './dashboard-session.guard';
import { SignInDto } from './dashboard.dto';

/** Sign-in (DESIGN §5): no session yet, so limited per client address like the other public endpoints. */
@Controller('dashboard/api')
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
export class DashboardAuthController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly auth: DashboardAuthService) {}

  @Get('nonce')
  async nonce() {
    return { ok: true, nonce: await this.auth.nonce() };
  }

  @Post('session')
  @HttpCode(200)
  async signIn(@Body() dto: SignInDto, @Res({ passthrough: true }) res: Response) {
    const { token, csrfToken, merchant } = await this.auth.signIn(dto.message, dto.signature);
    setCookie(res, DASHBOARD_COOKIE, token, { secure: this.config.secureCookies, path: '/dashboard', maxAgeMs: SESSION_TTL_MS });
    return { ok: true, merchant_id: merchant.id, csrf_token: csrfToken };
  }

}
