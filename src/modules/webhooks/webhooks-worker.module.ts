import { Module } from '@nestjs/common';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryService } from './delivery.service';
import { MaintenanceProcessor } from './maintenance.processor';
import { OutboxRedrive } from './outbox-redrive';
import { WebhooksCoreModule } from './webhooks-core.module';

/**
 * The worker's part of webhooks: the delivery processor and the outbox re-drive. The poster comes from the
 * global WebhooksModule; the request fields of a payload are read by the claim, through the query of
 * RequestFactsPort, which the requests module provides.
 */
@Module({
  imports: [WebhooksCoreModule],
  providers: [
    DeliveryService,
    DeliveryProcessor,
    OutboxRedrive,
    MaintenanceProcessor,
  ],
})
export class WebhooksWorkerModule {}
