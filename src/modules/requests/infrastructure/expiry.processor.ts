import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { ExpiryService } from '../application/expiry.service';

/** Expires one request at its expires_at; a no-op when anything else happened to it first. */
@Processor(QUEUES.expiry, { concurrency: 10 })
export class ExpiryProcessor extends WorkerHost {
  constructor(private readonly expiry: ExpiryService) {
    super();
  }

  async process(job: Job<ExpiryJob>): Promise<string> {
    const expired = await this.expiry.expireOne(job.data.requestId);
    return expired ? 'expired' : 'unchanged';
  }
}
