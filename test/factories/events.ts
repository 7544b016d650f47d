import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EventOutbox, type EventKind } from '../../src/modules/webhooks/event-outbox';
import { WebhookRelay } from '../../src/modules/webhooks/webhook-relay';
import type { TestService } from '../support/app';

/**
 * Puts a request in the state an event reports and records the event in the outbox in that same
 * transaction, as the pay and verification use cases do; then relays it unless told not to (an event
 * committed but never relayed, as if the writer died right after its commit).
 */
export async function recordProofEvent(
  svc: TestService,
  e: { partnerId: string; requestId: string; event?: EventKind; relay?: boolean },
): Promise<{ id: string; deliver: boolean }> {
  const event = e.event ?? 'payment.proof_attached';
  const recorded = await svc.app.get(DataSource).transaction(async (em) => {
    await em.query(
      `UPDATE payment_requests SET proof_status = $2, tx_hash = $3, proof_source = 'payer', payer_address = $4,
              proof_attached_at = COALESCE(proof_attached_at, now()),
              proof_verified_at = CASE WHEN $2 = 'verified' THEN now() END
        WHERE id = $1`,
      [e.requestId, event === 'payment.proof_verified' ? 'verified' : 'attached',
        `0x${randomBytes(32).toString('hex')}`, `0x${randomBytes(20).toString('hex')}`],
    );
    return svc.app.get(EventOutbox).record(em, { partnerId: e.partnerId, requestId: e.requestId, event, testMode: true });
  });
  if (e.relay !== false) await svc.app.get(WebhookRelay).enqueue([recorded.id]);
  return recorded;
}
