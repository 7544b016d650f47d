import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AssetRegistry } from '../chain/asset-registry';
import { MerchantContacts } from '../merchants/merchant-contacts.service';
import { nextStep, type SendResult } from './notification';
import { NotificationRequestsPort } from './notification-facts.port';
import type { NotificationEntity } from './notification.entity';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository } from './notifications.repository';
import { SmsClient } from './sms-client';
import { SmtpMailer } from './smtp-mailer';
import { renderEmail, renderSms, type MessageFacts } from './templates';

/** A message is held this many send timeouts: longer than any send can take, so only a vanished worker outlives it. */
export const LEASE_TIMEOUTS = 3;

/**
 * One attempt of one message: build it from the stored request and merchant, claim it (lease + attempt row
 * 'sending', committed), send it, record the outcome and schedule the next attempt as a new delayed job.
 * Building comes before the claim, so a failure to read (Postgres away) leaves nothing in doubt: BullMQ
 * retries the job.
 */
@Injectable()
export class NotificationSender implements OnApplicationShutdown {
  private readonly logger = new Logger('NotificationSender');
  private readonly mailer: SmtpMailer | null;
  private readonly sms: SmsClient | null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: NotificationsRepository,
    private readonly queue: NotificationQueue,
    private readonly requests: NotificationRequestsPort,
    private readonly merchants: MerchantContacts,
    private readonly assets: AssetRegistry,
  ) {
    this.mailer = config.smtpUrl
      ? new SmtpMailer(config.smtpUrl, config.mailFrom ?? `no-reply@${new URL(config.publicUrl).hostname}`, config.notifySendTimeoutMs)
      : null;
    this.sms = config.sms ? new SmsClient(config.sms, config.notifySendTimeoutMs) : null;
  }

  onApplicationShutdown(): void {
    this.mailer?.close();
  }

  async attempt(id: string, attempt: number): Promise<void> {
    const row = await this.repo.waitingFor(id, attempt);
    if (!row) {
      this.logger.debug(`attempt ${attempt} of notification ${id} not due; job ignored`);
      return;
    }
    const facts = await this.factsOf(row);
    const claimed = await this.repo.claim(id, attempt, this.config.notifySendTimeoutMs * LEASE_TIMEOUTS);
    if (!claimed) return; // another run of the same attempt got there first
    const result = await this.send(row, facts);
    const step = nextStep(result, attempt, Date.now() - row.createdAt.getTime(), {
      baseMs: this.config.notifyRetryBaseMs,
      maxMs: this.config.notifyRetryMaxMs,
      giveUpMs: this.config.notifyGiveUpMs,
    });
    const delayMs = step.outcome === 'retry' ? step.delayMs : 0;
    const recorded = await this.repo.record({
      id,
      attempt,
      outcome: step.outcome,
      error: result.kind === 'sent' ? null : result.error,
      response: result.kind === 'sent' ? result.response : null,
      delayMs,
    });
    if (!recorded) {
      this.logger.error(`notification ${id}: attempt ${attempt} ended (${result.kind}) after its lease; left as the re-drive marked it`);
      return;
    }
    if (step.outcome === 'retry') await this.queue.scheduleRetry({ id, attempt: attempt + 1 }, delayMs);
    else if (step.outcome !== 'sent') this.logger.warn(`notification ${id} (${row.kind} by ${row.channel}) ${step.outcome} after attempt ${attempt}`);
  }

  private async send(row: NotificationEntity, facts: MessageFacts): Promise<SendResult> {
    switch (row.channel) {
      case 'email':
        if (!this.mailer) return { kind: 'transient', error: 'email is off on this worker (no SMTP_URL)' };
        return this.mailer.send({ ...renderEmail(facts), to: row.to, messageId: row.messageId });
      case 'sms':
        if (!this.sms) return { kind: 'transient', error: 'SMS is off on this worker (SMS_* unset)' };
        return this.sms.send({ to: row.to, body: renderSms(facts), messageId: row.messageId });
    }
  }

  private async factsOf(row: NotificationEntity): Promise<MessageFacts> {
    const r = await this.requests.notifiedRequest(row.requestId);
    // The outbox row references its request (foreign key): not finding it is a failed read, retried by BullMQ.
    if (!r) throw new Error(`request ${row.requestId} of notification ${row.id} not found`);
    const merchant = await this.merchants.contactOf(r.merchantId);
    const token = await this.assets.storedAsset(r.chainId, r.tokenAddress);
    return {
      kind: row.kind,
      requestId: r.requestId,
      testMode: r.testMode,
      merchantName: merchant?.name ?? null,
      fiatAmount: r.fiatAmount,
      fiatCurrency: r.fiatCurrency,
      amount: r.amount,
      token,
      txHash: r.txHash,
      verifiedAt: r.proofVerifiedAt,
      payPageUrl: `${this.config.payUrl}/${r.requestId}`,
      dueAt: row.dueAt,
      expiresAt: r.expiresAt,
    };
  }
}
