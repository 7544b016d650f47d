import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MerchantContactsModule } from '../merchants/merchant-contacts.module';
import { NotificationAttemptEntity } from './notification-attempt.entity';
import { NotificationEntity } from './notification.entity';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository } from './notifications.repository';

/**
 * The notifications tables (notifications, notification_attempts), their repository and the queue's
 * producer, one instance each. Internal: imported by NotificationsModule and NotificationsWorkerModule only.
 */
@Module({
  imports: [TypeOrmModule.forFeature([NotificationEntity, NotificationAttemptEntity]), MerchantContactsModule],
  providers: [NotificationsRepository, NotificationQueue],
  exports: [NotificationsRepository, NotificationQueue, MerchantContactsModule],
})
export class NotificationsCoreModule {}
