import { Module } from '@nestjs/common';
import { AuditAdminController } from './audit-admin.controller';
import { AuditCoreModule } from './audit-core.module';

/** `GET /admin/api/audit` (HTTP role; the admin listener alone routes /admin). */
@Module({
  imports: [AuditCoreModule],
  controllers: [AuditAdminController],
})
export class AuditModule {}
