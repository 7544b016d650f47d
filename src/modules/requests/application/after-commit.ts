import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { MicroBatch } from '../../../common/micro-batch';
import { QUEUES, type ExpiryJob, type VerificationJob } from '../../../common/queue/queues';
import { WebhookRelay } from '../../webhooks/webhook-relay';

/**
 * Work queued once a use case's transaction has committed. Losing one of these is never fatal: the outbox
 * re-drive, the expiry sweep and the chain scan find what a lost job would have done; queuing right away
 * only makes it prompt.
 */
@Injectable()
export class AfterCommit {
  private readonly logger = new Logger('AfterCommit');

  constructor(
    @InjectQueue(QUEUES.verification) private readonly verification: Queue<VerificationJob>,
    @InjectQueue(QUEUES.expiry) private readonly expiry: Queue<ExpiryJob>,
    private readonly relay: WebhookRelay,
  ) {}

  async verificationRequested(requestId: string, txHash: string): Promise<void> {
    await this.safely('verification', () =>
      this.verification.add('verify', { requestId, txHash }, { jobId: `verify-${requestId}-${txHash}`, ...VERIFY_JOB_OPTIONS }),
    );
  }

  /** Creates that finish in one event-loop turn share one addBulk: one Redis round trip, not one each. */
  private readonly expiries = new MicroBatch<{ requestId: string; expiresAt: Date }, unknown>((xs) =>
    this.expiry.addBulk(
      xs.map(({ requestId, expiresAt }) => ({
        name: 'expire',
        data: { requestId },
        opts: { jobId: `expire-${requestId}`, delay: Math.max(0, expiresAt.getTime() - Date.now()) },
      })),
    ),
  );

  async requestCreated(requestId: string, expiresAt: Date): Promise<void> {
    await this.safely('expiry', () => this.expiries.submit({ requestId, expiresAt }));
  }

  /** Outbox rows committed: hand them to webhook delivery now (the relay never throws; the re-drive backs it). */
  async eventsRecorded(eventIds: string[]): Promise<void> {
    await this.relay.enqueue(eventIds);
  }

  private async safely(what: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      this.logger.warn(`could not queue ${what} now, the periodic sweep will pick it up: ${(e as Error).message}`);
    }
  }
}

/** RPC failures back off up to 30 s between tries, for as long as a payment could still arrive. */
export const VERIFY_JOB_OPTIONS = {
  attempts: 5000,
  backoff: { type: 'capped' },
  removeOnComplete: 1000,
  removeOnFail: 5000,
} as const;

export function cappedBackoff(attemptsMade: number): number {
  return Math.min(30000, 500 * 2 ** Math.min(attemptsMade, 10));
}
