import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookAttemptEntity } from './webhook-attempt.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { WebhookEventEntity } from './webhook-event.entity';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEventsRepository } from './webhook-events.repository';
import { ClaimedAttempts, PartnerGate } from './partner-gate';
import { deliveryJobId, WebhookDeliveryQueue } from './webhook-delivery.queue';
import { WebhookSecrets } from './webhook-secrets';

/**
 * The webhooks tables (webhook_events, webhook_attempts, webhook_endpoints), their repositories, the sealing
 * of the stored secrets and the `webhooks` queue's producer, one instance each. Internal to webhooks: imported only by WebhooksModule and WebhooksWorkerModule; other
 * modules go through WebhooksModule's exported services.
 */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookEventEntity, WebhookAttemptEntity, WebhookEndpointEntity])],
  providers: [
    WebhookEventsRepository,
    WebhookEndpointsRepository,
    PartnerGate,
    // What the gate seeds its slots from when Redis lost them: the attempts claimed in Postgres that may still
    // be in flight, as job ids, with what is left of their leases.
    {
      provide: ClaimedAttempts,
      inject: [WebhookEventsRepository],
      useFactory: (events: WebhookEventsRepository): ClaimedAttempts => ({
        list: async (leaseMs) =>
          (await events.claimedAttempts(leaseMs)).map((a) => ({ partnerId: a.partnerId, member: deliveryJobId(a.id, a.attempt), leaseLeftMs: a.leaseLeftMs })),
      }),
    },
    WebhookDeliveryQueue,
    WebhookSecrets,
  ],
  exports: [WebhookEventsRepository, WebhookEndpointsRepository, WebhookDeliveryQueue, WebhookSecrets],
})
export class WebhooksCoreModule {}
