import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../../common/http/body';
import type { Response } from 'express';
import { RateLimit } from '../../../common/rate-limit/rate-limit';
import { RateLimitGuard } from '../../../common/rate-limit/rate-limit.guard';
import { ApiKeyGuard, type AuthedRequest } from '../../auth/api-key.guard';
import { RequireScope } from '../../auth/scopes';
import { RequestsService } from '../application/requests.service';
import { CreateRequestDto, ListRequestsQuery } from './request.dto';
import { UuidParamPipe } from '../../../common/http/uuid-param.pipe';

@Controller('api/v1/requests')
@UseGuards(ApiKeyGuard, RateLimitGuard, BodyCheckGuard)
export class RequestsController {
  constructor(private readonly requests: RequestsService) {}

  @Post('create')
  @RequireScope('requests:write')
  @RateLimit(60)
  async create(@Req() req: AuthedRequest, @Body() dto: CreateRequestDto, @Res({ passthrough: true }) res: Response) {
    const { body, created } = await this.requests.create(req.principal, dto);
    res.status(created ? 201 : 200);
    return body;
  }

  @Get()
  @RequireScope('requests:read')
  @RateLimit(60)
  list(@Req() req: AuthedRequest, @Query() q: ListRequestsQuery) {
    return this.requests.list(req.principal, q);
  }

  @Get(':id')
  @RequireScope('requests:read')
  @RateLimit(60)
  get(@Req() req: AuthedRequest, @Param('id', UuidParamPipe) id: string) {
    return this.requests.get(req.principal, id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @RequireScope('requests:write')
  @RateLimit(60)
  cancel(@Req() req: AuthedRequest, @Param('id', UuidParamPipe) id: string) {
    return this.requests.cancel(req.principal, id);
  }
}
