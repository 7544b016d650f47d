import { Injectable } from '@nestjs/common';
import { PAGE_DEFAULT } from '../../common/paging';
import type { NotificationChannel, NotificationKind, NotificationStatus, StoredNotification } from './notification';
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
}

export interface NotificationPage {
  notifications: NotificationRecord[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/** The read side of the notifications outbox: per request for the dashboard, the unsent ones for operators. */
@Injectable()
export class NotificationsService {
  constructor(private readonly repo: NotificationsRepository) {}

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
}

function toRecord(n: StoredNotification): NotificationRecord {
  return {
    id: n.id, kind: n.kind, channel: n.channel, to: n.to, status: n.status, sentAt: n.sentAt, requestId: n.requestId, planId: n.planId,
    periodIndex: n.periodIndex, messageId: n.messageId, attempts: n.attempts, lastError: n.lastError, nextAttemptAt: n.nextAttemptAt,
    createdAt: n.createdAt,
  };
}
