import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { QUEUES, type VerificationJob } from '../../../common/queue/queues';
import { doubling } from '../../../common/time';
import { VerificationService } from '../application/verification.service';
import { cappedBackoff } from './verification.queue';

/**
 * Verifies a submitted hash; waits (delayed, not failed) for the transaction and its confirmations.
 * Waiting for a block: delayed by VERIFY_POLL_MS, woken earlier by the head watcher when that chain's tip
 * moves. Unknown to the node: looked up again after VERIFY_NOT_FOUND_BACKOFF_MS, doubling, until it has been
 * unknown for VERIFY_NOT_FOUND_GIVE_UP_MS (from the job's first look, or from the hash's attachment for a job
 * queued again, until it first sees the transaction: VerificationJob.since); then the request stays attached with
 * the note transaction_not_found.
 */
@Processor(QUEUES.verification, { concurrency: 20, settings: { backoffStrategy: cappedBackoff } })
export class VerificationProcessor extends WorkerHost {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly verification: VerificationService) {
    super();
  }

  async process(job: Job<VerificationJob>, token?: string): Promise<string> {
    const { requestId, txHash, wait: before, since: queuedSince } = job.data;
    const outcome = await this.verification.verify(requestId, txHash, 'payer', before?.for === 'block' ? before.tip : undefined);
    if (outcome.kind !== 'wait') return outcome.kind === 'rejected' ? `rejected: ${outcome.reason}` : outcome.kind;

    const now = Date.now();
    let wait: NonNullable<VerificationJob['wait']>;
    let delay: number;
    if (outcome.why === 'unknown') {
      const since = before?.for === 'backoff' ? before.since : Math.min(queuedSince ?? now, now);
      const tries = before?.for === 'backoff' ? before.tries + 1 : 0;
      const left = since + this.config.verifyNotFoundGiveUpMs - now;
      if (left <= 0) {
        await this.verification.giveUp(requestId, txHash);
        return 'gave up: transaction_not_found';
      }
      wait = { for: 'backoff', since, tries };
      // The last look falls exactly on the bound, so the give-up is not a whole doubling late.
      delay = doubling(this.config.verifyNotFoundBackoffMs, left, tries);
    } else {
      wait = { for: 'block', mode: outcome.mode, tip: outcome.tip };
      delay = this.config.verifyPollMs;
    }
    // `since` is not kept: a backoff carries its own start, and a job that saw the transaction (pending, or mined
    // and waiting for confirmations) counts a later loss of it from then, as any job does, not from the attachment.
    await job.updateData({ requestId, txHash, wait });
    await job.moveToDelayed(now + delay, token);
    throw new DelayedError();
  }
}
