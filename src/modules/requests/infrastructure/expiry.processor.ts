import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { RequestsRepository } from './requests.repository';

/** Expires one request at its expires_at; a no-op when anything else happened to it first. */
@Processor(QUEUES.expiry, { concurrency: 10 })
export class ExpiryProcessor extends WorkerHost {
  constructor(private readonly repo: RequestsRepository) {
    super();
  }

  async process(job: Job<ExpiryJob>): Promise<string> {
    const expired = await this.repo.applyStatus(job.data.requestId, 'expire');
    return expired ? 'expired' : 'unchanged';
  }
}
