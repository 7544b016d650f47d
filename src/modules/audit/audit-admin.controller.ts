import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { ListAuditQuery } from './audit.dto';
import { auditPageBody } from './audit.mapper';
import { AuditService } from './audit.service';

/** The audit trail on the admin listener, newest first. */
@Controller('admin/api')
@UseGuards(AdminTokenGuard)
export class AuditAdminController {
  constructor(private readonly audit: AuditService) {}

  @Get('audit')
  async list(@Query() q: ListAuditQuery) {
    const page = await this.audit.list({
      partnerId: q.partner_id,
      action: q.action,
      since: q.since ? new Date(q.since) : undefined,
      limit: q.limit,
      offset: q.offset,
    });
    return { ok: true, ...auditPageBody(page) };
  }
}
