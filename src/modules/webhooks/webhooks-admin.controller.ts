import { Body, Controller, Get, HttpCode, Param, Post, Put, Query, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { DeliveriesService } from './deliveries.service';
import { toConfiguredView } from './webhooks.mapper';
import { ListDeliveriesQuery, PutWebhookDto } from './webhooks.dto';
import { WebhookSettingsService } from './webhook-settings.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { AdminActor } from '../audit/admin-actor.decorator';
import type { Actor } from '../audit/audit';
import { NoFields } from '../../common/http/validation';

/** Webhook settings and the delivery log on the admin listener (DESIGN §4). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class WebhooksAdminController {
  constructor(private readonly settings: WebhookSettingsService, private readonly deliveries: DeliveriesService) {}

  @Put('partners/:id/webhook')
  async configure(@Param('id', UuidParamPipe) id: string, @Body() dto: PutWebhookDto, @AdminActor() actor: Actor) {
    return { ok: true, ...toConfiguredView(await this.settings.configure(id, dto, actor)) };
  }

  @Post('partners/:id/webhook/rotate')
  @HttpCode(200)
  async rotate(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return { ok: true, ...(await this.settings.rotate(id, actor)) };
  }

  @Post('partners/:id/webhook/confirm-rotation')
  @HttpCode(200)
  async confirmRotation(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    await this.settings.confirmRotation(id, actor);
    return { ok: true };
  }

  @Get('deliveries')
  async list(@Query() q: ListDeliveriesQuery) {
    return { ok: true, ...(await this.deliveries.list(q)) };
  }

  @Get('deliveries/:deliveryId')
  async get(@Param('deliveryId', UuidParamPipe) deliveryId: string) {
    return { ok: true, ...(await this.deliveries.get(deliveryId)) };
  }

  @Post('deliveries/:deliveryId/redeliver')
  @HttpCode(200)
  async redeliver(@Param('deliveryId', UuidParamPipe) deliveryId: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return { ok: true, ...(await this.deliveries.redeliver(deliveryId, actor)) };
  }
}
