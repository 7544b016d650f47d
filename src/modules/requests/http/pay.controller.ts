import { Body, Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../../common/http/body';
import { PublicRateLimit } from '../../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../../common/rate-limit/rate-limit.guard';
import { PayService } from '../application/pay.service';
import { UuidParamPipe } from '../../../common/http/uuid-param.pipe';
import { SubmitProofDto } from './request.dto';
import { NoFields } from '../../../common/http/validation';

/** The pay page's JSON API (DESIGN §4): public, no key, limited per client address. */
@Controller('pay/api')
@UseGuards(RateLimitGuard, BodyCheckGuard)
@PublicRateLimit()
export class PayController {
  constructor(private readonly pay: PayService) {}

  @Get(':id')
  async view(@Param('id', UuidParamPipe) id: string) {
    return { ok: true, ...(await this.pay.view(id)) };
  }

  @Post(':id/open')
  @HttpCode(200)
  async open(@Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    return { ok: true, ...(await this.pay.open(id)) };
  }

  @Post(':id/proof')
  @HttpCode(200)
  async proof(@Param('id', UuidParamPipe) id: string, @Body() body: SubmitProofDto) {
    return { ok: true, ...(await this.pay.submitProof(id, body.tx_hash)) };
  }
}
