import { Body, Controller, Get, Inject, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { BodyCheckGuard } from '../../common/http/body';
import { PublicRateLimit } from '../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../common/rate-limit/rate-limit.guard';
import { CreateHandleRequestDto, IdempotencyKeyHeader } from './dashboard.dto';
import { HandlePageService } from './handle-page.service';
import { shownName } from '../../common/names';

/** DESIGN §5 "Public handle page" API: no sign-in, limited per client address like the pay API. */
@Controller('m/api')
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
export class HandlePageController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly page: HandlePageService) {}

  @Get(':handle')
  async view(@Param('handle') handle: string) {
    const { handle: h, merchant: m } = await this.page.merchant(handle);
    return {
      ok: true,
      handle: h,
      display_name: shownName(m.displayName, m.businessName),
      fiat_currency: m.displayCurrency,
      test_mode: m.testMode,
      accepting_payments: !m.disabled,
    };
  }

  /** 201 for a new request; 200 for a replay of the page's `Idempotency-Key` (the page sends one per payment the payer means). */
  @Post(':handle/requests')
  async create(
    @Param('handle') handle: string,
    @Body() dto: CreateHandleRequestDto,
    @IdempotencyKeyHeader() idempotencyKey: string | undefined,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { request: r, created } = await this.page.createRequest(handle, dto, idempotencyKey, req.ip);
    res.status(created ? 201 : 200);
    return { ok: true, request_id: r.id, pay_page_url: `${this.config.payUrl}/${r.id}`, ...(created ? {} : { idempotent_replay: true }) };
  }
}
