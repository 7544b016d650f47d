import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import type { Actor } from '../audit/audit';
import { AdminActor } from '../audit/admin-actor.decorator';
import { ListNotificationsQuery, ResendNotificationDto } from './notifications.dto';
import { notificationPageBody, recordJson } from './notifications.mapper';
import { NotificationsService } from './notifications.service';

/**
 * Messages on the admin listener, newest first: by default those that did not go out (failed, abandoned);
 * and sending one of those again.
 */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class NotificationsAdminController {
  constructor(private readonly notifications: NotificationsService) {}

  @Get('notifications')
  async list(@Query() q: ListNotificationsQuery) {
    const page = await this.notifications.list({ status: q.status, requestId: q.request_id, limit: q.limit, offset: q.offset });
    return { ok: true, ...notificationPageBody(page) };
  }

  /** → {ok, notification_id, …, status: 'pending', resent_at}; 409 conflict for one pending, sent, or in doubt without allow_duplicate. */
  @Post('notifications/:id/resend')
  @HttpCode(200)
  async resend(@Param('id', UuidParamPipe) id: string, @Body() dto: ResendNotificationDto, @AdminActor() actor: Actor) {
    return { ok: true, ...recordJson(await this.notifications.resend(id, dto.allow_duplicate === true, actor)) };
  }
}
