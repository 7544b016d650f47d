import { iso } from '../../common/time';
import type { WebhookAttemptEntity } from './webhook-attempt.entity';
import type { DeliveryState, WebhookEventEntity } from './webhook-event.entity';
import type { EventKind } from './event-outbox';
import type { AttemptOutcome } from './delivery-policy';
import type { WebhookConfigured } from './webhook-settings.service';

/** A delivery as the admin API and the portal show it (docs/webhooks.md). */
export interface DeliveryView {
  delivery_id: string;
  partner_id: string;
  request_id: string;
  event: EventKind;
  test_mode: boolean;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  delivered_at: string | null;
  recorded_at: string | null;
  relayed_at: string | null;
}

export interface AttemptView {
  attempt: number;
  started_at: string | null;
  duration_ms: number;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  outcome: AttemptOutcome;
}

export interface DeliveryPage {
  deliveries: DeliveryView[];
  has_more: boolean;
  limit: number;
  offset: number;
}

export type DeliveryDetail = DeliveryView & { attempt_log: AttemptView[] };

export function toDeliveryView(e: WebhookEventEntity): DeliveryView {
  return {
    delivery_id: e.id,
    partner_id: e.partnerId,
    request_id: e.requestId,
    event: e.event,
    test_mode: e.testMode,
    state: e.state,
    attempts: e.attempts,
    next_attempt_at: iso(e.nextAttemptAt),
    last_attempt_at: iso(e.lastAttemptAt),
    delivered_at: iso(e.deliveredAt),
    recorded_at: iso(e.recordedAt),
    relayed_at: iso(e.relayedAt),
  };
}

export function toAttemptView(a: WebhookAttemptEntity): AttemptView {
  return {
    attempt: a.attempt,
    started_at: iso(a.startedAt),
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    error_class: a.errorClass,
    error_message: a.errorMessage,
    outcome: a.outcome,
  };
}

/** The PUT answer: `secret` only when this call generated it. */
export function toConfiguredView(c: WebhookConfigured): Record<string, unknown> {
  return { url: c.url, enabled: c.enabled, enabled_at: iso(c.enabledAt), ...(c.secret ? { secret: c.secret } : {}) };
}
