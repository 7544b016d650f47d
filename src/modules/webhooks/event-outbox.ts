import { Injectable } from '@nestjs/common';
import type { Queryable } from '../../database/db';

export type EventKind = 'payment.proof_attached' | 'payment.proof_verified';

export interface RecordedEvent {
  id: string;
  deliver: boolean;
}

/**
 * Writes an event into the outbox in the caller's transaction, beside the state change that caused it, so
 * an event exists exactly when its change committed. An event is marked for delivery only when the
 * partner's webhooks were enabled at that moment: nothing earlier is ever backfilled (spec §6 step 3).
 */
@Injectable()
export class EventOutbox {
  async record(tx: Queryable, e: { partnerId: string; requestId: string; event: EventKind; testMode: boolean }): Promise<RecordedEvent> {
    const [row] = await tx.query<{ id: string; deliver: boolean }>(
      `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
       SELECT p.id, $2, $3, $4, p.webhook_enabled AND p.webhook_url IS NOT NULL,
              CASE WHEN p.webhook_enabled AND p.webhook_url IS NOT NULL THEN 'pending' ELSE 'skipped' END
         FROM partners p WHERE p.id = $1
       RETURNING id, deliver`,
      [e.partnerId, e.requestId, e.event, e.testMode],
      'outbox_record',
    );
    return row;
  }
}
