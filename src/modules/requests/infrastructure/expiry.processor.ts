import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { ExpiryService } from '../application/expiry.service';

/**
 * Expires one request at its expires_at; a no-op when anything else happened to it first. Nothing queues these
 * any more (the sweep stores expiries, ExpiryService): this drains the delayed jobs that earlier versions
 * queued for requests created before the upgrade, and can go once no such request is open (at most the longest
 * allowed expiry after the upgrade).
 */
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
