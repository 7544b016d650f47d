import { Injectable, Logger } from '@nestjs/common';
import { waitBriefly } from '../../../common/queue/after-commit-wait';
import { NotificationRelay } from '../../notifications/notification-relay';
import { WebhookRelay } from '../../webhooks/webhook-relay';
import { ExpiryQueue } from '../infrastructure/expiry.queue';
import { VerificationQueue } from '../infrastructure/verification.queue';

/**
 * Work queued once a use case's transaction has committed. Losing one of these is never fatal: the outbox
 * re-drive, the expiry sweep and the chain scan find what a lost job would have done; queuing right away
 * only makes it prompt. So none of it holds a response longer than AFTER_COMMIT_WAIT_MS: with Redis away
 * the add waits in the background for Redis and the caller gets its answer.
 */
@Injectable()
export class AfterCommit {
  private readonly logger = new Logger('AfterCommit');

  constructor(
    private readonly verification: VerificationQueue,
    private readonly expiry: ExpiryQueue,
    private readonly relay: WebhookRelay,
    private readonly notices: NotificationRelay,
  ) {}

  /**
   * A proof attached (or submitted again): its verification, recovered without the job by the chain scan, which
   * verifies any transfer paying an attached request; and the expiry job of `claimUntil`, where a request with
   * an attached proof lapses unless verified (its expires_at job finds it not lapsed).
   */
  async verificationRequested(requestId: string, txHash: string, claimUntil: Date): Promise<void> {
    await Promise.all([
      waitBriefly(this.logger, 'queueing verification', 'the chain scan will verify the payment', () => this.verification.add(requestId, txHash)),
      this.expiryAt(claimUntil),
    ]);
  }

  async requestCreated(expiresAt: Date): Promise<void> {
    await this.expiryAt(expiresAt);
  }

  /** Recovered without the job by the expiry sweep. Nothing to wait for when the job of that moment is added. */
  private async expiryAt(at: Date): Promise<void> {
    const adding = this.expiry.schedule(at);
    if (adding) await waitBriefly(this.logger, 'scheduling expiry', 'the expiry sweep will expire it', () => adding);
  }

  /** Outbox rows committed: hand them to webhook delivery now (the relay never throws; the re-drive backs it). */
  async eventsRecorded(eventIds: string[]): Promise<void> {
    await this.relay.enqueue(eventIds);
  }

  /** Notifications committed: hand them to the sender now (never throws; the notifications re-drive backs it). */
  async notificationsRecorded(ids: string[]): Promise<void> {
    await this.notices.enqueue(ids);
  }
}
