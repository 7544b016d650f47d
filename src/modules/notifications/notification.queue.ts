import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { NOTIFICATION_JOBS, QUEUES, type NotificationJob } from '../../common/queue/queues';
import type { DueNotification } from './notifications.repository';

/** BullMQ's own retries re-run the same attempt after an infrastructure failure (Postgres away) before the claim. */
const JOB_OPTIONS: JobsOptions = { attempts: 5, backoff: { type: 'exponential', delay: 1000 } };

/** Deterministic per attempt, so a duplicate relay or re-drive adds nothing. */
export function notificationJobId(id: string, attempt: number): string {
  return `${id}-${attempt}`;
}

/** The producer side of the `notifications` queue: one job per attempt, carrying ids only. */
@Injectable()
export class NotificationQueue {
  constructor(@InjectQueue(QUEUES.notifications) private readonly queue: Queue<NotificationJob>) {}

  get raw(): Queue {
    return this.queue;
  }

  async addNow(due: DueNotification[]): Promise<void> {
    if (due.length === 0) return;
    await this.queue.addBulk(
      due.map(({ id, attempt }) => ({
        name: NOTIFICATION_JOBS.send,
        data: { notificationId: id, attempt },
        opts: { ...JOB_OPTIONS, jobId: notificationJobId(id, attempt) },
      })),
    );
  }

  async scheduleRetry({ id, attempt }: DueNotification, delayMs: number): Promise<void> {
    await this.queue.add(NOTIFICATION_JOBS.send, { notificationId: id, attempt }, { ...JOB_OPTIONS, jobId: notificationJobId(id, attempt), delay: delayMs });
  }

  /**
   * Makes sure a job exists for this attempt; a finished job under the same id that left the message where
   * it was (it exhausted BullMQ's retries) is replaced. Returns true when a job was added.
   */
  async ensureJob({ id, attempt }: DueNotification): Promise<boolean> {
    const jobId = notificationJobId(id, attempt);
    const state = await this.queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    else if (state !== 'unknown') return false;
    await this.queue.add(NOTIFICATION_JOBS.send, { notificationId: id, attempt }, { ...JOB_OPTIONS, jobId });
    return true;
  }
}
