import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { ExpiryService } from '../application/expiry.service';

/**
 * Stores expiries at their due moment: every request lapsed by then, in the sweep's batches. A job of one
 * request, queued by an older build, expires that one (a no-op when anything else happened to it first);
 * after a deploy those come due at the rate they were created, hence the concurrency. Due jobs that run
 * together wait on each other's rows, then find them stored.
 */
@Processor(QUEUES.expiry, { concurrency: 10 })
export class ExpiryProcessor extends WorkerHost {
  constructor(private readonly expiry: ExpiryService) {
    super();
  }

  async process(job: Job<ExpiryJob>): Promise<string | number> {
    if ('requestId' in job.data) return (await this.expiry.expireOne(job.data.requestId)) ? 'expired' : 'unchanged';
    return this.expiry.sweep();
  }
}
