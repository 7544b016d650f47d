import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryService } from './delivery.service';
import { MaintenanceProcessor, OutboxRedrive } from './outbox-redrive';
import { WebhookEventsRepository } from './webhook-events.repository';
import { WebhookPoster } from './webhook-poster';

/** The worker's part of webhooks: the delivery processor and the outbox re-drive. */
@Module({
  providers: [
    {
      // One poster per process: its keep-alive agents reuse sockets to a partner across deliveries.
      provide: WebhookPoster,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new WebhookPoster({ allowPrivate: config.webhookAllowPrivateUrls, timeoutMs: config.webhookTimeoutMs }),
    },
    WebhookEventsRepository,
    DeliveryService,
    DeliveryProcessor,
    OutboxRedrive,
    MaintenanceProcessor,
  ],
})
export class WebhooksWorkerModule {}
