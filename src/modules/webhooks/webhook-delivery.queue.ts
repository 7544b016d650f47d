import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';

export const DELIVER_JOB = 'deliver';

/**
 * BullMQ's own retries are for infrastructure failures inside the processor (Postgres away): they re-run the
 * same attempt. The spec's retry schedule is a new delayed job per attempt, chosen by DeliveryService.
 */
const JOB_OPTIONS: JobsOptions = { attempts: 5, backoff: { type: 'exponential', delay: 1000 } };

/** Deterministic per attempt, so a duplicate relay or re-drive adds nothing (BullMQ 6 refuses ':' in ids). */
export function deliveryJobId(eventId: string, attempt: number): string {
  return `${eventId}-${attempt}`;
}

/** An attempt to queue: the event, its attempt number and its partner (the delivery slots are per partner). */
export interface DueAttempt {
  id: string;
  attempt: number;
  partnerId: string;
}

/** The producer side of the `webhooks` queue: one job per delivery attempt, carrying ids only. */
@Injectable()
export class WebhookDeliveryQueue {
  constructor(@InjectQueue(QUEUES.webhooks) private readonly queue: Queue<WebhookJob>) {}

  /** Attempts due now, in one round trip. */
  async addNow(due: DueAttempt[]): Promise<void> {
    if (due.length === 0) return;
    await this.queue.addBulk(
      due.map(({ id, attempt, partnerId }) => ({
        name: DELIVER_JOB,
        data: { eventId: id, attempt, partnerId },
        opts: { ...JOB_OPTIONS, jobId: deliveryJobId(id, attempt) },
      })),
    );
  }

  /** Attempt n+1 after a retriable failure, as a new delayed job. */
  async scheduleRetry({ id: eventId, attempt, partnerId }: DueAttempt, delayMs: number): Promise<void> {
    await this.queue.add(DELIVER_JOB, { eventId, attempt, partnerId }, { ...JOB_OPTIONS, jobId: deliveryJobId(eventId, attempt), delay: delayMs });
  }

  /**
   * Makes sure a job exists for this attempt. A job under the same id that already finished without moving
   * the event on (its worker died, or it exhausted BullMQ's retries) is replaced; a waiting, delayed or
   * active one is left alone. Returns true when a job was added.
   */
  async ensureJob({ id: eventId, attempt, partnerId }: DueAttempt): Promise<boolean> {
    const jobId = deliveryJobId(eventId, attempt);
    const state = await this.queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    else if (state !== 'unknown') return false;
    await this.queue.add(DELIVER_JOB, { eventId, attempt, partnerId }, { ...JOB_OPTIONS, jobId });
    return true;
  }
}
