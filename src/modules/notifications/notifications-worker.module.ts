import { Module } from '@nestjs/common';
import { NotificationProcessor } from './notification.processor';
import { NotificationRedrive } from './notification-redrive';
import { NotificationSender } from './notification-sender.service';
import { NotificationsCoreModule } from './notifications-core.module';

/**
 * The worker's part: the sender (SMTP, SMS), the processor and the re-drive. The request a message is built
 * from comes through NotificationRequestsPort, which the requests module provides.
 */
@Module({
  imports: [NotificationsCoreModule],
  providers: [NotificationSender, NotificationProcessor, NotificationRedrive],
})
export class NotificationsWorkerModule {}
