import { Global, Module } from '@nestjs/common';
import { AuditCoreModule } from '../audit/audit-core.module';
import { NotificationRelay } from './notification-relay';
import { NotificationsAdminController } from './notifications-admin.controller';
import { NotificationsCoreModule } from './notifications-core.module';
import { NotificationsOutbox } from './notifications-outbox';
import { NotificationsService } from './notifications.service';

/**
 * Notifications in both roles (DESIGN §6): the outbox that verification (and plans' charges) write to, the
 * relay after commit, the service (dashboard detail, operators' list and resend) and /admin/api/notifications. Global, like
 * WebhooksModule, because requests writes to it and must not import it back through a module cycle. Sending
 * is the worker's: NotificationsWorkerModule.
 */
@Global()
@Module({
  imports: [NotificationsCoreModule, AuditCoreModule],
  controllers: [NotificationsAdminController],
  providers: [NotificationsOutbox, NotificationRelay, NotificationsService],
  exports: [NotificationsOutbox, NotificationRelay, NotificationsService],
})
export class NotificationsModule {}
