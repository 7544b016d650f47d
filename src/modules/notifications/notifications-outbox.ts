import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MerchantContacts } from '../merchants/merchant-contacts.service';
import { messageIdFor, messagesForCharge, messagesForVerified, type Channels } from './notification';
import { NotificationsRepository } from './notifications.repository';

/**
 * Writes messages into the notifications outbox in the caller's transaction, beside the state change that
 * causes them, so a message exists exactly when its change committed. Only channels that are configured and
 * messages with a recipient are written. After the commit, hand the returned ids to NotificationRelay.enqueue
 * (the re-drive sends them anyway, within NOTIFY_REDRIVE_MS, if that is lost).
 */
@Injectable()
export class NotificationsOutbox {
  private readonly channels: Channels;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: NotificationsRepository,
    private readonly merchants: MerchantContacts,
  ) {
    this.channels = { email: config.smtpUrl !== null, sms: config.sms !== null };
  }

  /** A request became verified: the customer's receipt (email, SMS) and the merchant's note. */
  async requestVerified(
    em: EntityManager,
    r: { requestId: string; merchantId: string; customerEmail: string | null; customerPhone: string | null },
  ): Promise<string[]> {
    if (!this.channels.email && !this.channels.sms) return [];
    const merchantEmail = this.channels.email ? ((await this.merchants.contactOf(r.merchantId, em))?.email ?? null) : null;
    return this.write(em, messagesForVerified(this.channels, { ...r, merchantEmail }));
  }

  /**
   * A plan's charge was created (its payment request inserted in `em`'s transaction): the notice to the
   * payer, with the pay link and the due time. For the plans module, inside its charge-creating transaction.
   */
  chargeCreated(em: EntityManager, c: { requestId: string; planId: string; periodIndex: number; payerEmail: string | null; dueAt: Date }): Promise<string[]> {
    return this.write(em, messagesForCharge(this.channels, c));
  }

  private write(em: EntityManager, ms: ReturnType<typeof messagesForVerified>): Promise<string[]> {
    return this.repo.insert(em, ms, (id) => messageIdFor(id, this.config.mailFrom, this.config.publicUrl));
  }
}
