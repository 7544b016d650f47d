import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
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
  // Bridge for the requests branch: its use cases pass their TypeORM EntityManager (the agreed contract);
  // the webhooks branch's own version of this file, taking only an EntityManager, replaces it on merge.
  async record(tx: EntityManager | Queryable, e: { partnerId: string; requestId: string; event: EventKind; testMode: boolean }): Promise<RecordedEvent> {
    const query = <T>(sql: string, params: unknown[]): Promise<T[]> =>
      tx instanceof EntityManager ? tx.query<T[]>(sql, params) : tx.query(sql, params, 'outbox_record') as Promise<T[]>;
    const [row] = await query<{ id: string; deliver: boolean }>(
      `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
       SELECT p.id, $2, $3, $4, p.webhook_enabled AND p.webhook_url IS NOT NULL,
              CASE WHEN p.webhook_enabled AND p.webhook_url IS NOT NULL THEN 'pending' ELSE 'skipped' END
         FROM partners p WHERE p.id = $1
       RETURNING id, deliver`,
      [e.partnerId, e.requestId, e.event, e.testMode],
    );
    return row;
  }
}
