import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AuditCoreModule } from '../audit/audit-core.module';
import { DeliveriesService } from './deliveries.service';
import { EventOutbox } from './event-outbox';
import { WebhookPoster } from './webhook-poster';
import { WebhookRelay } from './webhook-relay';
import { WebhookSettingsService } from './webhook-settings.service';
import { WebhookUpdateLimiter } from './webhook-update-limiter';
import { WebhooksAdminController } from './webhooks-admin.controller';
import { WebhooksCoreModule } from './webhooks-core.module';

/**
 * Webhook events in both roles: the outbox every state change writes to, the relay that enqueues after
 * commit, settings (with the shared update limit), the delivery log, and the one poster of the process
 * (the worker's deliveries and the portal's test ping share its keep-alive sockets). Delivery itself is
 * the worker's: WebhooksWorkerModule.
 */
@Global()
@Module({
  imports: [WebhooksCoreModule, AuditCoreModule],
  controllers: [WebhooksAdminController],
  providers: [
    EventOutbox,
    WebhookRelay,
    WebhookSettingsService,
    WebhookUpdateLimiter,
    DeliveriesService,
    {
      provide: WebhookPoster,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new WebhookPoster({ allowPrivate: config.webhookAllowPrivateUrls, timeoutMs: config.webhookTimeoutMs }),
    },
  ],
  exports: [EventOutbox, WebhookRelay, WebhookSettingsService, WebhookUpdateLimiter, DeliveriesService, WebhookPoster],
})
export class WebhooksModule {}
