import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { WebhookEventsRepository } from './webhook-events.repository';

export type EventKind = 'payment.proof_attached' | 'payment.proof_verified';

export interface RecordedEvent {
  id: string;
  deliver: boolean;
}

/**
 * Writes an event into the outbox in the caller's transaction, beside the state change that caused it, so
 * an event exists exactly when its change committed. An event is marked for delivery only when the
 * partner's webhooks were enabled with a URL at that moment: nothing earlier is ever backfilled (spec §6
 * step 3). After the commit, hand the ids to WebhookRelay.enqueue.
 */
@Injectable()
export class EventOutbox {
  constructor(private readonly events: WebhookEventsRepository) {}

  record(em: EntityManager, e: { partnerId: string; requestId: string; event: EventKind; testMode: boolean }): Promise<RecordedEvent> {
    return this.events.insert(em, e);
  }
}
