import { BeforeApplicationShutdown, Inject } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError, type Job } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { DeliveryService } from './delivery.service';
import { PartnerSlots } from './partner-slots';
import { slotWaitMs } from './slot-wait';

/**
 * A slot is held for the whole attempt (claim, post, record). The lease outlives the poster's deadline by
 * this margin, so a slow claim or record does not let a further attempt of the partner in; a worker that
 * dies mid-attempt frees its slot when the lease runs out.
 */
const SLOT_LEASE_MARGIN_MS = 30_000;

/**
 * The `webhooks` queue. 50 attempts run at once per worker, and at most WEBHOOK_PARTNER_CONCURRENCY of one
 * partner across every worker (DESIGN §7): a partner whose endpoint hangs holds that many slots for at most
 * WEBHOOK_TIMEOUT_MS each and never delays other partners. A job that finds its partner's slots taken goes
 * back to the delayed set for a short jittered while, before anything is claimed: no attempt is spent, and
 * BullMQ counts no failure (moveToDelayed skips the attempt count). The lock is renewed every 5 s while an
 * attempt runs; a worker that dies leaves a lock that expires within 10 s, and the stalled check (every 5 s)
 * hands the job to another worker, which delivers it again under the same delivery_id.
 */
@Processor(QUEUES.webhooks, { concurrency: 50, lockDuration: 10_000, stalledInterval: 5_000 })
export class DeliveryProcessor extends WorkerHost implements BeforeApplicationShutdown {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly delivery: DeliveryService,
    private readonly slots: PartnerSlots,
  ) {
    super();
  }

  async process(job: Job<WebhookJob>, token?: string): Promise<void> {
    const { eventId, attempt } = job.data;
    const partnerId = job.data.partnerId ?? (await this.delivery.partnerOf(eventId));
    // No such event (deleted): the claim would find nothing either.
    if (!partnerId) return;
    const slot = await this.slots.tryAcquire(partnerId, this.config.webhookPartnerConcurrency, this.config.webhookTimeoutMs + SLOT_LEASE_MARGIN_MS);
    if (!slot) {
      // Started without a slot: attemptsStarted counts every start, attemptsMade only failures.
      const waits = Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
      await job.moveToDelayed(Date.now() + slotWaitMs(waits), token);
      throw new DelayedError();
    }
    try {
      await this.delivery.attempt(eventId, attempt);
    } finally {
      await slot.release();
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Let running attempts finish before the poster closes its keep-alive sockets (at application shutdown).
    await this.worker.close();
  }
}
