import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { UuidParamPipe } from '../../../common/http/uuid-param.pipe';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { RateLimit } from '../../../common/rate-limit/rate-limit';
import { PartnerApiGuard, type AuthedRequest } from '../../auth/partner-api.guard';
import { RequireScope } from '../../auth/scopes';
import { cannotCancelWith, partnerScope, RequestsService } from '../application/requests.service';
import type { PaymentRequest } from '../domain/payment-request';
import { CreateRequestDto, createInput, listQuery, ListRequestsQuery } from './request.dto';
import { toRequestList, toRequestResponse } from './request.mapper';
import { NoFields } from '../../../common/http/validation';

@Controller('api/v1/requests')
@UseGuards(PartnerApiGuard)
export class RequestsController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly requests: RequestsService) {}

  @Post('create')
  @RequireScope('requests:write')
  @RateLimit(60)
  async create(@Req() req: AuthedRequest, @Body() dto: CreateRequestDto, @Res({ passthrough: true }) res: Response) {
    const { request, created } = await this.requests.create(req.principal, createInput(dto));
    res.status(created ? 201 : 200);
    return toRequestResponse(request, this.config.payUrl, new Date(), !created);
  }

  @Get()
  @RequireScope('requests:read')
  @RateLimit(60)
  async list(@Req() req: AuthedRequest, @Query() q: ListRequestsQuery) {
    return toRequestList(await this.requests.list(partnerScope(req.principal), listQuery(q)), this.config.payUrl, new Date());
  }

  @Get(':id')
  @RequireScope('requests:read')
  @RateLimit(60)
  async get(@Req() req: AuthedRequest, @Param('id', UuidParamPipe) id: string) {
    return toRequestResponse(await this.requests.get(partnerScope(req.principal), id), this.config.payUrl, new Date());
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @RequireScope('requests:write')
  @RateLimit(60)
  async cancel(@Req() req: AuthedRequest, @Param('id', UuidParamPipe) id: string, @Body() _body: NoFields) {
    const view = (r: PaymentRequest) => toRequestResponse(r, this.config.payUrl, new Date());
    return view(await this.requests.cancel(partnerScope(req.principal), id, req.principal.keyId).catch(cannotCancelWith(view)));
  }
}
