import { OnApplicationShutdown } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { DeliveryService } from './delivery.service';
import { WebhookPoster } from './webhook-poster';

/**
 * The `webhooks` queue. 50 attempts run at once per worker, so a partner whose endpoint hangs holds one slot
 * for at most WEBHOOK_TIMEOUT_MS and never delays other partners. The lock is renewed every 5 s while an
 * attempt runs; a worker that dies leaves a lock that expires within 10 s, and the stalled check (every 5 s)
 * hands the job to another worker, which delivers it again under the same delivery_id.
 */
@Processor(QUEUES.webhooks, { concurrency: 50, lockDuration: 10_000, stalledInterval: 5_000 })
export class DeliveryProcessor extends WorkerHost implements OnApplicationShutdown {
  constructor(private readonly delivery: DeliveryService, private readonly poster: WebhookPoster) {
    super();
  }

  process(job: Job<WebhookJob>): Promise<void> {
    return this.delivery.attempt(job.data.eventId, job.data.attempt);
  }

  async onApplicationShutdown(): Promise<void> {
    // Let running attempts finish before their keep-alive sockets go.
    await this.worker.close();
    this.poster.close();
  }
}
