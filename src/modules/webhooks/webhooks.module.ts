import { Global, Module } from '@nestjs/common';
import { DeliveriesService } from './deliveries.service';
import { EventOutbox } from './event-outbox';
import { WebhookEventsRepository } from './webhook-events.repository';
import { WebhookRelay } from './webhook-relay';
import { WebhookSettingsService } from './webhook-settings.service';
import { WebhookUpdateLimiter } from './webhook-update-limiter';
import { WebhooksAdminController } from './webhooks-admin.controller';

/**
 * Webhook events in both roles: the outbox every state change writes to, the relay that enqueues after
 * commit, settings (with the shared update limit) and the delivery log. Delivery itself is the worker's:
 * WebhooksWorkerModule.
 */
@Global()
@Module({
  controllers: [WebhooksAdminController],
  providers: [EventOutbox, WebhookRelay, WebhookEventsRepository, WebhookSettingsService, WebhookUpdateLimiter, DeliveriesService],
  exports: [EventOutbox, WebhookRelay, WebhookSettingsService, WebhookUpdateLimiter, DeliveriesService],
})
export class WebhooksModule {}
