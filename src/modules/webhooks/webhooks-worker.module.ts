import { Module } from '@nestjs/common';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryService } from './delivery.service';
import { MaintenanceProcessor } from './maintenance.processor';
import { OutboxRedrive } from './outbox-redrive';
import { RequestFactsPort } from './request-facts.port';
import { TemporaryRequestFacts } from './request-facts.temporary';
import { WebhooksCoreModule } from './webhooks-core.module';

/**
 * The worker's part of webhooks: the delivery processor and the outbox re-drive. The poster comes from the
 * global WebhooksModule; the request fields of a payload from
 * RequestFactsPort, which the requests module provides.
 */
@Module({
  imports: [WebhooksCoreModule],
  providers: [
    DeliveryService,
    DeliveryProcessor,
    OutboxRedrive,
    MaintenanceProcessor,
    // Removed at merge: the requests module provides RequestFactsPort.
    { provide: RequestFactsPort, useClass: TemporaryRequestFacts },
  ],
})
export class WebhooksWorkerModule {}
