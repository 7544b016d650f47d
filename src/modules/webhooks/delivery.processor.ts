import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { DeliveryService } from './delivery.service';
import { DUE_JOB, WebhookDeliveryQueue } from './webhook-delivery.queue';

/**
 * The `webhooks` queue. 50 attempts run at once per worker. Every `deliver` job already holds one of its
 * partner's WEBHOOK_PARTNER_CONCURRENCY slots (PartnerGate admitted it), so a worker never picks up an
 * attempt it cannot run: a partner whose endpoint hangs holds its slots for at most WEBHOOK_TIMEOUT_MS each,
 * and its other attempts wait in the gate, spending no attempt and no worker time (DESIGN §7). When an
 * attempt ends its slot admits the partner's next one. A `due` job is a retry's timer: it hands the attempt
 * to the gate. The lock is renewed every 5 s while an attempt runs; a worker that dies leaves a lock that
 * expires within 10 s, and the stalled check (every 5 s) hands the job to another worker, which delivers it
 * again under the same delivery_id.
 */
@Processor(QUEUES.webhooks, { concurrency: 50, lockDuration: 10_000, stalledInterval: 5_000 })
export class DeliveryProcessor extends WorkerHost implements BeforeApplicationShutdown {
  private readonly logger = new Logger('DeliveryProcessor');

  constructor(
    private readonly delivery: DeliveryService,
    private readonly queue: WebhookDeliveryQueue,
  ) {
    super();
  }

  async process(job: Job<WebhookJob>): Promise<void> {
    const { eventId, attempt } = job.data;
    const partnerId = job.data.partnerId ?? (await this.delivery.partnerOf(eventId));
    // No such event (deleted): the claim would find nothing either.
    if (!partnerId) return;
    if (job.name === DUE_JOB) return this.queue.addNow([{ id: eventId, attempt, partnerId }]);
    // Jobs queued before the gate existed carry no slot: they run as they come.
    if (!job.data.admitted) return this.delivery.attempt(eventId, attempt);
    // A run after the first (the worker died, or BullMQ retries a failure) renews the slot's lease.
    if (job.attemptsStarted > 1) await this.queue.starting(partnerId, eventId, attempt);
    let done = false;
    try {
      await this.delivery.attempt(eventId, attempt);
      done = true;
    } finally {
      // A failure BullMQ will retry keeps the slot for the retry (its lease bounds a worker that died).
      if (done || job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
        await this.queue.finished(partnerId, eventId, attempt).catch((e: Error) => {
          // The slot frees itself when its lease runs out; the re-drive admits the waiting ones then.
          this.logger.warn(`slot of ${eventId}/${attempt} not released: ${e.message}`);
        });
      }
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Let running attempts finish before the poster closes its keep-alive sockets (at application shutdown).
    await this.worker.close();
  }
}
