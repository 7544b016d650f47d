import { iso } from '../../common/time';
import type { NotificationPage, NotificationRecord, SentMessage } from './notifications.service';

/** The dashboard detail's `notifications` items (DESIGN §8). */
export function sentMessageJson(m: SentMessage) {
  return { kind: m.kind, channel: m.channel, to: m.to, status: m.status, sent_at: iso(m.sentAt) };
}

export function recordJson(n: NotificationRecord) {
  return {
    notification_id: n.id,
    ...sentMessageJson(n),
    request_id: n.requestId,
    plan_id: n.planId,
    period_index: n.periodIndex,
    message_id: n.messageId,
    attempts: n.attempts,
    last_error: n.lastError,
    next_attempt_at: n.status === 'pending' ? iso(n.nextAttemptAt) : null,
    created_at: iso(n.createdAt),
    resent_at: iso(n.resentAt),
  };
}

export function notificationPageBody(p: NotificationPage) {
  return { notifications: p.notifications.map(recordJson), has_more: p.hasMore, limit: p.limit, offset: p.offset };
}
