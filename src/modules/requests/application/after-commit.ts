import { Injectable, Logger } from '@nestjs/common';
import { WebhookRelay } from '../../webhooks/webhook-relay';
import { ExpiryQueue } from '../infrastructure/expiry.queue';
import { VerificationQueue } from '../infrastructure/verification.queue';

/**
 * Work queued once a use case's transaction has committed. Losing one of these is never fatal: the outbox
 * re-drive, the expiry sweep and the chain scan find what a lost job would have done; queuing right away
 * only makes it prompt.
 */
@Injectable()
export class AfterCommit {
  private readonly logger = new Logger('AfterCommit');

  constructor(
    private readonly verification: VerificationQueue,
    private readonly expiry: ExpiryQueue,
    private readonly relay: WebhookRelay,
  ) {}

  async verificationRequested(requestId: string, txHash: string): Promise<void> {
    await this.safely('verification', () => this.verification.add(requestId, txHash));
  }

  async requestCreated(requestId: string, expiresAt: Date): Promise<void> {
    await this.safely('expiry', () => this.expiry.schedule(requestId, expiresAt));
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
