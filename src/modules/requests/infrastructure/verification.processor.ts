import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { QUEUES, type VerificationJob } from '../../../common/queue/queues';
import { VerificationService } from '../application/verification.service';
import { cappedBackoff } from './verification.queue';

/** Verifies a submitted hash; waits (delayed, not failed) for the transaction and its confirmations. */
@Processor(QUEUES.verification, { concurrency: 20, settings: { backoffStrategy: cappedBackoff } })
export class VerificationProcessor extends WorkerHost {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly verification: VerificationService) {
    super();
  }

  async process(job: Job<VerificationJob>, token?: string): Promise<string> {
    const outcome = await this.verification.verify(job.data.requestId, job.data.txHash, 'payer');
    if (outcome.kind === 'wait') {
      await job.moveToDelayed(Date.now() + this.config.verifyPollMs, token);
      throw new DelayedError();
    }
    return outcome.kind === 'rejected' ? `rejected: ${outcome.reason}` : outcome.kind;
  }
}
