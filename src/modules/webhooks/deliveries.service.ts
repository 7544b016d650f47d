import { Injectable, Logger } from '@nestjs/common';
import { AppError } from '../../common/errors';
import { PAGE_DEFAULT } from '../../common/paging';
import { iso } from '../../common/time';
import { Db } from '../../database/db';
import type { ListDeliveriesQuery } from './webhooks.dto';
import { WebhookEventsRepository, type AttemptRow, type DeliveryRow } from './webhook-events.repository';
import { WebhookRelay } from './webhook-relay';

/** The operator's view of deliveries (DESIGN §4): list, show with attempts, redeliver. */
@Injectable()
export class DeliveriesService {
  private readonly logger = new Logger('Deliveries');

  constructor(
    private readonly db: Db,
    private readonly events: WebhookEventsRepository,
    private readonly relay: WebhookRelay,
  ) {}

  async list(q: ListDeliveriesQuery): Promise<Record<string, unknown>> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const rows = await this.events.list({ partnerId: q.partner_id, requestId: q.request_id, state: q.status, limit: limit + 1, offset });
    return { ok: true, deliveries: rows.slice(0, limit).map(toDelivery), has_more: rows.length > limit, limit, offset };
  }

  async get(deliveryId: string): Promise<Record<string, unknown>> {
    const row = await this.load(deliveryId);
    const attempts = await this.events.attempts(deliveryId);
    return { ok: true, ...toDelivery(row), attempt_log: attempts.map(toAttempt) };
  }

  /**
   * Sends a finished delivery again under the same delivery_id: a new series of up to WEBHOOK_MAX_ATTEMPTS
   * attempts on the usual schedule. Events recorded while webhooks were off were never meant for delivery
   * and stay unsent; a delivery still in progress is not doubled.
   */
  async redeliver(deliveryId: string): Promise<Record<string, unknown>> {
    const current = await this.load(deliveryId);
    if (current.state === 'skipped') {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: 'recorded while webhooks were disabled: never delivered' }] });
    }
    const [partner] = await this.db.query<{ webhook_enabled: boolean; webhook_url: string | null }>(
      `SELECT webhook_enabled, webhook_url FROM partners WHERE id = $1`,
      [current.partner_id],
    );
    if (!partner?.webhook_enabled || !partner.webhook_url) {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: "the partner's webhooks are disabled" }] });
    }
    const reopened = await this.events.reopen(deliveryId);
    if (!reopened) {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: 'delivery still in progress' }] });
    }
    try {
      await this.relay.ensureJob(deliveryId, reopened.attempts + 1);
    } catch (e) {
      // The event is pending in Postgres: the re-drive enqueues it when Redis answers again.
      this.logger.error(`redelivery of ${deliveryId} not enqueued yet: ${(e as Error).message}`);
    }
    return { ok: true, ...toDelivery(reopened) };
  }

  private async load(deliveryId: string): Promise<DeliveryRow> {
    const row = await this.events.get(deliveryId);
    if (!row) throw AppError.notFound();
    return row;
  }
}

function toDelivery(r: DeliveryRow): Record<string, unknown> {
  return {
    delivery_id: r.id,
    partner_id: r.partner_id,
    request_id: r.request_id,
    event: r.event,
    test_mode: r.test_mode,
    state: r.state,
    attempts: r.attempts,
    next_attempt_at: iso(r.next_attempt_at),
    last_attempt_at: iso(r.last_attempt_at),
    delivered_at: iso(r.delivered_at),
    recorded_at: iso(r.recorded_at),
    relayed_at: iso(r.relayed_at),
  };
}

function toAttempt(a: AttemptRow): Record<string, unknown> {
  return {
    attempt: a.attempt,
    started_at: iso(a.started_at),
    duration_ms: a.duration_ms,
    status_code: a.status_code,
    error_class: a.error_class,
    error_message: a.error_message,
    outcome: a.outcome,
  };
}
