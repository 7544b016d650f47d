import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QUEUES, type VerificationJob } from '../../../common/queue/queues';
import { doubling } from '../../../common/time';

/** RPC failures back off up to 30 s between tries, for as long as a payment could still arrive. */
export const VERIFY_JOB_OPTIONS = {
  attempts: 5000,
  backoff: { type: 'capped' },
  removeOnComplete: 1000,
  removeOnFail: 5000,
} as const;

export function cappedBackoff(attemptsMade: number): number {
  return doubling(500, 30000, attemptsMade);
}

/** Producer of the verification queue: one job per (request, submitted hash). */
@Injectable()
export class VerificationQueue {
  constructor(@InjectQueue(QUEUES.verification) private readonly queue: Queue<VerificationJob>) {}

  /**
   * Queues the verification of (request, hash), once: a job under its id that is waiting, delayed or running is
   * left alone. One that has finished (kept by removeOnComplete/removeOnFail) is replaced: BullMQ ignores an add
   * under a finished job's id, so a payer submitting again a hash given up on (transaction_not_found) that has
   * since been mined would otherwise have nothing look at it.
   */
  async add(requestId: string, txHash: string, since?: number): Promise<void> {
    const jobId = `verify-${requestId}-${txHash}`;
    const state = await this.queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    await this.queue.add('verify', since === undefined ? { requestId, txHash } : { requestId, txHash, since }, { jobId, ...VERIFY_JOB_OPTIONS });
  }
}
