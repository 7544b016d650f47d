import { BeforeApplicationShutdown } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { NOTIFICATION_JOBS, QUEUES, type NotificationJob } from '../../common/queue/queues';
import { NotificationRedrive } from './notification-redrive';
import { NotificationSender } from './notification-sender.service';

/**
 * The `notifications` queue: one attempt per `send` job, and the repeating re-drive. A worker that dies
 * mid-attempt leaves a lock that expires within 10 s; BullMQ hands the job to another worker, whose claim
 * finds the attempt already taken and does nothing (the re-drive decides that message: in doubt).
 * Each running send opens its own SMTP connection (SmtpMailer has no pool), so none waits for a connection
 * while its lease runs: this concurrency is also the most SMTP connections one worker holds.
 */
@Processor(QUEUES.notifications, { concurrency: 10, lockDuration: 10_000, stalledInterval: 5_000 })
export class NotificationProcessor extends WorkerHost implements BeforeApplicationShutdown {
  constructor(
    private readonly sender: NotificationSender,
    private readonly redrive: NotificationRedrive,
  ) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name) {
      case NOTIFICATION_JOBS.send: {
        const { notificationId, attempt } = job.data as NotificationJob;
        return this.sender.attempt(notificationId, attempt);
      }
      case NOTIFICATION_JOBS.redrive:
        return this.redrive.run();
      default:
        throw new Error(`no handler for notifications job "${job.name}"`);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Let running sends finish and record their outcomes before the database and Redis connections close.
    await this.worker.close();
  }
}
