import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { MAINTENANCE_JOBS, QUEUES } from '../../common/queue/queues';
import { OutboxRedrive } from './outbox-redrive';

/**
 * The `maintenance` queue: the webhooks module's repeating work. BullMQ hands any job of a queue to any of
 * its workers, so a queue has one processor that dispatches by job name (the chain side has `scheduled`).
 */
@Processor(QUEUES.maintenance)
export class MaintenanceProcessor extends WorkerHost {
  constructor(private readonly redrive: OutboxRedrive) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name) {
      case MAINTENANCE_JOBS.outboxRedrive:
        return this.redrive.run();
      default:
        throw new Error(`no handler for maintenance job "${job.name}"`);
    }
  }
}
