import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { iso } from '../../common/time';
import { MerchantsService } from '../merchants/merchants.service';
import { RatesService, type RateRow } from '../rates/rates.service';
import { AdminTokenGuard } from './admin-token.guard';
import { CreateKeyDto, CreatePartnerDto, UpdatePartnerDto } from './admin.dto';
import { PartnersService } from './partners.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/** The operator API of DESIGN §4, on the admin listener only. */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class AdminController {
  constructor(
    private readonly partners: PartnersService,
    private readonly merchants: MerchantsService,
    private readonly rates: RatesService,
    private readonly limiter: PartnerLimiter,
  ) {}

  @Post('partners')
  createPartner(@Body() dto: CreatePartnerDto) {
    return this.partners.create(dto);
  }

  @Get('partners/:id')
  getPartner(@Param('id', UuidParamPipe) id: string) {
    return this.partners.get(id);
  }

  @Patch('partners/:id')
  updatePartner(@Param('id', UuidParamPipe) id: string, @Body() dto: UpdatePartnerDto) {
    return this.partners.update(id, dto);
  }

  @Post('partners/:id/keys')
  createKey(@Param('id', UuidParamPipe) id: string, @Body() dto: CreateKeyDto) {
    return this.partners.createKey(id, dto);
  }

  @Get('partners/:id/keys')
  listKeys(@Param('id', UuidParamPipe) id: string) {
    return this.partners.listKeys(id);
  }

  @Delete('partners/:id/keys/:keyId')
  revokeKey(@Param('id', UuidParamPipe) id: string, @Param('keyId', UuidParamPipe) keyId: string) {
    return this.partners.revokeKey(id, keyId);
  }

  @Post('merchants/:id/disable')
  @HttpCode(200)
  disable(@Param('id', UuidParamPipe) id: string) {
    return this.merchants.setDisabled(id, true);
  }

  @Post('merchants/:id/enable')
  @HttpCode(200)
  enable(@Param('id', UuidParamPipe) id: string) {
    return this.merchants.setDisabled(id, false);
  }

  @Get('rates')
  listRates() {
    return ratesBody(this.rates.list());
  }

  /** A manual refresh on a partner's behalf: at most one per minute per partner (spec §8), portal included. */
  @Post('partners/:id/rates/refresh')
  @HttpCode(200)
  async refreshRates(@Param('id', UuidParamPipe) id: string) {
    await this.partners.get(id);
    await this.limiter.consume('rates-refresh', id, 1);
    return ratesBody(await this.rates.refresh());
  }
}

export function ratesBody(rows: RateRow[]) {
  return {
    ok: true,
    rates: rows.map((r) => ({ currency: r.currency, rate: r.rate, source: r.source, updated_at: iso(r.updated_at) })),
  };
}
