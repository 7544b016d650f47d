import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { ListAlertsQuery } from './alerts.dto';
import { alertPageBody } from './alerts.mapper';
import { AlertsService } from './alerts.service';

/** Stored alerts on the admin listener, newest first (DESIGN §7). */
@Controller('admin/api')
@UseGuards(AdminTokenGuard)
export class AlertsAdminController {
  constructor(private readonly alerts: AlertsService) {}

  @Get('alerts')
  async list(@Query() q: ListAlertsQuery) {
    return { ok: true, ...alertPageBody(await this.alerts.list(q)) };
  }
}
