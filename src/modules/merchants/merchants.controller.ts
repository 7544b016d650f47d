import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { RateLimit } from '../../common/rate-limit/rate-limit';
import { PartnerApiGuard, type AuthedRequest } from '../auth/partner-api.guard';
import { RequireScope } from '../auth/scopes';
import { CreateMerchantDto, ListMerchantsQuery } from './merchant.dto';
import { merchantBody, merchantListBody } from './merchant.mapper';
import { MerchantsService } from './merchants.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/** Spec §4.5–4.8; the accounts paths are the same three operations (and share their rate-limit buckets). */
@Controller(['api/v1/merchants', 'api/v1/accounts'])
@UseGuards(PartnerApiGuard)
export class MerchantsController {
  constructor(private readonly merchants: MerchantsService) {}

  @Post()
  @RequireScope('merchants:write')
  @RateLimit(30)
  async create(@Req() req: AuthedRequest, @Body() dto: CreateMerchantDto, @Res({ passthrough: true }) res: Response) {
    const { merchant, created } = await this.merchants.create(req.principal, dto);
    res.status(created ? 201 : 200);
    return merchantBody(merchant, !created);
  }

  @Get()
  @RequireScope('merchants:read')
  @RateLimit(60)
  async list(@Req() req: AuthedRequest, @Query() q: ListMerchantsQuery) {
    return merchantListBody(await this.merchants.list(req.principal, q));
  }

  @Get(':id')
  @HttpCode(200)
  @RequireScope('merchants:read')
  @RateLimit(60)
  async get(@Req() req: AuthedRequest, @Param('id', UuidParamPipe) id: string) {
    return merchantBody(await this.merchants.get(req.principal, id));
  }
}
