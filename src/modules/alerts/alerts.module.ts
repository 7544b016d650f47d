import { Module } from '@nestjs/common';
import { AlertsAdminController } from './alerts-admin.controller';
import { AlertsCoreModule } from './alerts-core.module';

/** `GET /admin/api/alerts` (HTTP role; the admin listener alone routes /admin). */
@Module({
  imports: [AlertsCoreModule],
  controllers: [AlertsAdminController],
})
export class AlertsModule {}
