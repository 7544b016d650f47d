import { Body, Controller, Get, HttpCode, Param, Post, Put, Query, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { DeliveriesService } from './deliveries.service';
import { ListDeliveriesQuery, PutWebhookDto } from './webhooks.dto';
import { WebhookSettingsService } from './webhook-settings.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';

/** Webhook settings and the delivery log on the admin listener (DESIGN §4). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class WebhooksAdminController {
  constructor(private readonly settings: WebhookSettingsService, private readonly deliveries: DeliveriesService) {}

  @Put('partners/:id/webhook')
  configure(@Param('id', UuidParamPipe) id: string, @Body() dto: PutWebhookDto) {
    return this.settings.configure(id, dto);
  }

  @Post('partners/:id/webhook/rotate')
  @HttpCode(200)
  rotate(@Param('id', UuidParamPipe) id: string) {
    return this.settings.rotate(id);
  }

  @Post('partners/:id/webhook/confirm-rotation')
  @HttpCode(200)
  confirmRotation(@Param('id', UuidParamPipe) id: string) {
    return this.settings.confirmRotation(id);
  }

  @Get('deliveries')
  list(@Query() q: ListDeliveriesQuery) {
    return this.deliveries.list(q);
  }

  @Get('deliveries/:deliveryId')
  get(@Param('deliveryId', UuidParamPipe) deliveryId: string) {
    return this.deliveries.get(deliveryId);
  }

  @Post('deliveries/:deliveryId/redeliver')
  @HttpCode(200)
  redeliver(@Param('deliveryId', UuidParamPipe) deliveryId: string) {
    return this.deliveries.redeliver(deliveryId);
  }
}
