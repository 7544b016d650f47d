import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../../common/errors';
import { waitBriefly } from '../../common/queue/after-commit-wait';
import { PAGE_DEFAULT } from '../../common/paging';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import type { ListDeliveriesQuery } from './webhooks.dto';
import { toAttemptView, toDeliveryView, type DeliveryDetail, type DeliveryPage, type DeliveryView } from './webhooks.mapper';
import { WebhookDeliveryQueue } from './webhook-delivery.queue';
import { DELIVERY_STATES, type DeliveryState, type WebhookEventEntity } from './webhook-event.entity';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEventsRepository } from './webhook-events.repository';

/**
 * The states a deliveries list shows unless asked for one: not the events recorded while webhooks were off
 * (`skipped`), never meant for delivery (DESIGN §3); `status=skipped` lists them.
 */
export const LISTED_STATES: readonly DeliveryState[] = DELIVERY_STATES.filter((s) => s !== 'skipped');

/** The operator's view of deliveries (DESIGN §4): list, show with attempts, redeliver. */
@Injectable()
export class DeliveriesService {
  private readonly logger = new Logger('Deliveries');

  constructor(
    private readonly events: WebhookEventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly queue: WebhookDeliveryQueue,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /** Deliveries not finished yet, by state (pending, delivering), for the metrics scrape. */
  backlog(timeoutMs: number): ReturnType<WebhookEventsRepository['openDeliveries']> {
    return this.events.openDeliveries(timeoutMs);
  }

  async list(q: ListDeliveriesQuery): Promise<DeliveryPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const states = q.status ? [q.status] : LISTED_STATES;
    const rows = await this.events.list({ partnerId: q.partner_id, requestId: q.request_id, states, limit: limit + 1, offset });
    return { deliveries: rows.slice(0, limit).map(toDeliveryView), has_more: rows.length > limit, limit, offset };
  }

  async get(deliveryId: string): Promise<DeliveryDetail> {
    const row = await this.load(deliveryId);
    const attempts = await this.events.attempts(deliveryId);
    return { ...toDeliveryView(row), attempt_log: attempts.map(toAttemptView) };
  }

  /**
   * Sends a finished delivery again under the same delivery_id: a new series of up to WEBHOOK_MAX_ATTEMPTS
   * attempts on the usual schedule. Events recorded while webhooks were off were never meant for delivery
   * and stay unsent; a delivery still in progress is not doubled.
   */
  async redeliver(deliveryId: string, actor: Actor): Promise<DeliveryView> {
    const current = await this.load(deliveryId);
    if (current.state === 'skipped') {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: 'recorded while webhooks were disabled: never delivered' }] });
    }
    const endpoint = await this.endpoints.find(current.partnerId);
    if (!endpoint?.enabled || !endpoint.url) {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: "the partner's webhooks are disabled" }] });
    }
    const reopened = await this.dataSource.transaction(async (em) => {
      const row = await this.events.reopen(em, deliveryId);
      if (row) {
        await this.audit.record(em, actor, {
          partnerId: row.partnerId, action: 'delivery.redelivered', targetId: deliveryId,
          details: { event: row.event, request_id: row.requestId, previous_state: current.state, attempts_before: row.attempts },
        });
      }
      return row;
    });
    if (!reopened) {
      throw new AppError('conflict', { errors: [{ field: 'delivery_id', message: 'delivery still in progress' }] });
    }
    // The event is pending in Postgres: with Redis away the call answers, and the re-drive enqueues it later.
    await waitBriefly(this.logger, `redelivery of ${deliveryId}`, 'the outbox re-drive will enqueue it', () =>
      // The stored id, not the path's spelling: an upper-case UUID would be another gate member and job id for
      // the same attempt, which the re-drive (lower case, from Postgres) would admit a second time.
      this.queue.ensureJob({ id: reopened.id, attempt: reopened.attempts + 1, partnerId: reopened.partnerId }),
    );
    return toDeliveryView(reopened);
  }

  private async load(deliveryId: string): Promise<WebhookEventEntity> {
    const row = await this.events.get(deliveryId);
    if (!row) throw AppError.notFound();
    return row;
  }
}
