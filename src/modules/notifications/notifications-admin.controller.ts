import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { ListNotificationsQuery } from './notifications.dto';
import { notificationPageBody } from './notifications.mapper';
import { NotificationsService } from './notifications.service';

/** Messages on the admin listener, newest first: by default those that did not go out (failed, abandoned). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard)
export class NotificationsAdminController {
  constructor(private readonly notifications: NotificationsService) {}

  @Get('notifications')
  async list(@Query() q: ListNotificationsQuery) {
    const page = await this.notifications.list({ status: q.status, requestId: q.request_id, limit: q.limit, offset: q.offset });
    return { ok: true, ...notificationPageBody(page) };
  }
}
