import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../../common/errors';
import { waitBriefly } from '../../common/queue/after-commit-wait';
import { PAGE_DEFAULT } from '../../common/paging';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { MerchantContacts } from '../merchants/merchant-contacts.service';
import { resendRefusal, type NotificationChannel, type NotificationKind, type NotificationStatus, type StoredNotification } from './notification';
import { NotificationRequestsPort } from './notification-facts.port';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository } from './notifications.repository';

/** What was sent about a request, as the dashboard shows it (DESIGN §8). */
export interface SentMessage {
  kind: NotificationKind;
  channel: NotificationChannel;
  to: string;
  status: NotificationStatus;
  sentAt: Date | null;
}

/** A message as operators see it (admin API). */
export interface NotificationRecord extends SentMessage {
  id: string;
  requestId: string;
  planId: string | null;
  periodIndex: number | null;
  messageId: string;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: Date;
  createdAt: Date;
  resentAt: Date | null;
}

export interface NotificationPage {
  notifications: NotificationRecord[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/**
 * The notifications outbox for people: per request for the dashboard; for operators, the messages that did
 * not go out and sending one of them again.
 */
@Injectable()
export class NotificationsService {
  private readonly logger = new Logger('Notifications');

  constructor(
    private readonly repo: NotificationsRepository,
    private readonly requests: NotificationRequestsPort,
    private readonly queue: NotificationQueue,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
    private readonly merchants: MerchantContacts,
  ) {}

  async sentFor(requestId: string): Promise<SentMessage[]> {
    return (await this.repo.forRequest(requestId)).map((n) => ({ kind: n.kind, channel: n.channel, to: n.to, status: n.status, sentAt: n.sentAt }));
  }

  /** Newest first; without a status, the messages that did not go out (failed and abandoned). */
  async list(q: { status?: NotificationStatus; requestId?: string; limit?: number; offset?: number }): Promise<NotificationPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const rows = await this.repo.list({ statuses: q.status ? [q.status] : ['failed', 'abandoned'], requestId: q.requestId, limit: limit + 1, offset });
    return { notifications: rows.slice(0, limit).map(toRecord), hasMore: rows.length > limit, limit, offset };
  }

  /**
   * Sends a message that did not go out (failed, abandoned) again, under its Message-ID, with NOTIFY_GIVE_UP_MS
   * of retries of its own (resendRefusal says which may be, judged on the message and its request as they are). Audited as `notification.resent` with the
   * message's partner, in the transaction that reopens it. The job is added after the commit, waited for
   * briefly like every after-commit hook: with Redis away the call still answers, and the re-drive adds the job
   * once the message is overdue.
   */
  async resend(id: string, allowDuplicate: boolean, actor: Actor): Promise<NotificationRecord> {
    const read = await this.repo.get(id);
    if (!read) throw AppError.notFound();
    const request = await this.requests.notifiedRequest(read.requestId);
    // The outbox row references its request (foreign key): only a deleted one is missing.
    if (!request) throw conflict(`request ${read.requestId} not found`);
    // A merchant's note goes to the merchant's email as it is now (recipientNow).
    const merchantEmail = read.kind === 'merchant_note' ? ((await this.merchants.contactOf(request.merchantId))?.email ?? null) : null;
    const refusal = resendRefusal(read, { ...request, merchantEmail }, allowDuplicate);
    if (refusal) throw conflict(refusal);
    const status = read.status as 'failed' | 'abandoned'; // resendRefusal passes no other
    const reopened = await this.dataSource.transaction(async (em) => {
      const n = await this.repo.reopen(em, id, { attempts: read.attempts, status });
      if (n) {
        await this.audit.record(em, actor, {
          partnerId: request.partnerId, action: 'notification.resent', targetId: id,
          details: {
            kind: n.kind, channel: n.channel, request_id: n.requestId, previous_status: status, last_outcome: read.lastOutcome,
            attempts_before: read.attempts, allow_duplicate: allowDuplicate,
          },
        });
      }
      return n;
    });
    // Changed since it was read (another operator's resend, most likely): judged again only on a new read.
    if (!reopened) throw conflict('the message changed while it was being resent; read it again');
    await waitBriefly(this.logger, `resend of notification ${id}`, 'the notifications re-drive will enqueue it', () =>
      this.queue.ensureJob({ id, attempt: reopened.attempts + 1 }),
    );
    return toRecord(reopened);
  }
}

const conflict = (message: string) => new AppError('conflict', { errors: [{ field: 'notification_id', message }] });

function toRecord(n: StoredNotification): NotificationRecord {
  return {
    id: n.id, kind: n.kind, channel: n.channel, to: n.to, status: n.status, sentAt: n.sentAt, requestId: n.requestId, planId: n.planId,
    periodIndex: n.periodIndex, messageId: n.messageId, attempts: n.attempts, lastError: n.lastError, nextAttemptAt: n.nextAttemptAt,
    createdAt: n.createdAt, resentAt: n.resentAt,
  };
}
