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

  async add(requestId: string, txHash: string): Promise<void> {
    await this.queue.add('verify', { requestId, txHash }, { jobId: `verify-${requestId}-${txHash}`, ...VERIFY_JOB_OPTIONS });
  }
}
