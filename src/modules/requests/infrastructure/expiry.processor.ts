import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { ExpiryService } from '../application/expiry.service';

/**
 * Stores expiries at their due moment: every request lapsed by then, in the sweep's batches (a job of one
 * request, queued by an older build, expires that one; a no-op when anything else happened to it first). One
 * at a time: jobs that come due together (a worker back after a pause) would only wait on each other's rows.
 */
@Processor(QUEUES.expiry, { concurrency: 1 })
export class ExpiryProcessor extends WorkerHost {
  constructor(private readonly expiry: ExpiryService) {
    super();
  }

  async process(job: Job<ExpiryJob>): Promise<string | number> {
    if ('requestId' in job.data) return (await this.expiry.expireOne(job.data.requestId)) ? 'expired' : 'unchanged';
    return this.expiry.sweep();
  }
}
