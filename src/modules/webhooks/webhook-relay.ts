import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { WebhookEventsRepository } from './webhook-events.repository';

export const DELIVER_JOB = 'deliver';

/**
 * BullMQ's own retries are for infrastructure failures inside the processor (Postgres away): they re-run the
 * same attempt. The spec's retry schedule is a new delayed job per attempt, chosen by DeliveryService.
 */
const JOB_OPTIONS: JobsOptions = { attempts: 5, backoff: { type: 'exponential', delay: 1000 } };
// An after-commit hook must not hold the caller's response hostage to a Redis outage.
const RELAY_TIMEOUT_MS = 2000;

/** Deterministic per attempt, so a duplicate relay or re-drive adds nothing (BullMQ 6 refuses ':' in ids). */
export function deliveryJobId(eventId: string, attempt: number): string {
  return `${eventId}-${attempt}`;
}

/**
 * Moves outbox rows to the `webhooks` queue. Postgres is the system of record: whatever this fails to
 * enqueue, the outbox re-drive (OutboxRedrive, every 15 s) enqueues later, so no event is lost with Redis.
 */
@Injectable()
export class WebhookRelay {
  private readonly logger = new Logger('WebhookRelay');

  constructor(
    @InjectQueue(QUEUES.webhooks) private readonly queue: Queue<WebhookJob>,
    private readonly events: WebhookEventsRepository,
  ) {}

  /**
   * Call after the transaction that recorded the events has committed, with the ids EventOutbox.record()
   * returned. Events recorded while webhooks were off (deliver = false), or already relayed, are ignored.
   * Never rejects and returns within about 2 s: a failure is logged and left to the re-drive. Called before
   * the commit it finds nothing to relay (the rows are not visible yet) and the re-drive delivers them.
   */
  async enqueue(eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const work = (async () => {
      const due = await this.events.markRelayed(eventIds);
      if (due.length === 0) return;
      await this.queue.addBulk(
        due.map(({ id, attempt }) => ({
          name: DELIVER_JOB,
          data: { eventId: id, attempt },
          opts: { ...JOB_OPTIONS, jobId: deliveryJobId(id, attempt) },
        })),
      );
    })();
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), RELAY_TIMEOUT_MS);
    });
    try {
      const result = await Promise.race([work, deadline]);
      if (result === 'timeout') {
        this.logger.warn(`relay of ${eventIds.length} event(s) still pending after ${RELAY_TIMEOUT_MS} ms; the re-drive will cover it`);
        work.catch((e: Error) => this.logger.error(`relay failed, the re-drive will enqueue: ${e.message}`));
      }
    } catch (e) {
      this.logger.error(`relay failed, the re-drive will enqueue: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Attempt n+1 after a retriable failure, as a new delayed job. */
  async scheduleRetry(eventId: string, attempt: number, delayMs: number): Promise<void> {
    await this.queue.add(DELIVER_JOB, { eventId, attempt }, { ...JOB_OPTIONS, jobId: deliveryJobId(eventId, attempt), delay: delayMs });
  }

  /**
   * Makes sure a job exists for this attempt. A job under the same id that already finished without moving
   * the event on (its worker died, or it exhausted BullMQ's retries) is replaced; a waiting, delayed or
   * active one is left alone. Returns true when a job was added.
   */
  async ensureJob(eventId: string, attempt: number): Promise<boolean> {
    const jobId = deliveryJobId(eventId, attempt);
    const state = await this.queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    else if (state !== 'unknown') return false;
    await this.queue.add(DELIVER_JOB, { eventId, attempt }, { ...JOB_OPTIONS, jobId });
    return true;
  }
}
