import { BeforeApplicationShutdown } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { DeliveryService } from './delivery.service';

/**
 * The `webhooks` queue. 50 attempts run at once per worker, so a partner whose endpoint hangs holds one slot
 * for at most WEBHOOK_TIMEOUT_MS and never delays other partners. The lock is renewed every 5 s while an
 * attempt runs; a worker that dies leaves a lock that expires within 10 s, and the stalled check (every 5 s)
 * hands the job to another worker, which delivers it again under the same delivery_id.
 */
@Processor(QUEUES.webhooks, { concurrency: 50, lockDuration: 10_000, stalledInterval: 5_000 })
export class DeliveryProcessor extends WorkerHost implements BeforeApplicationShutdown {
  constructor(private readonly delivery: DeliveryService) {
    super();
  }

  process(job: Job<WebhookJob>): Promise<void> {
    return this.delivery.attempt(job.data.eventId, job.data.attempt);
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Let running attempts finish before the poster closes its keep-alive sockets (at application shutdown).
    await this.worker.close();
  }
}
