import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EventOutbox, type EventKind } from '../../src/modules/webhooks/event-outbox';
import { WebhookRelay } from '../../src/modules/webhooks/webhook-relay';
import type { TestService } from '../support/app';
import { Receiver } from '../support/receiver';
import { admin, createOnboardedMerchant, createPartner } from './partners';
import { mustCreateRequest } from './requests';

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

/**
 * A partner with webhooks on, pointing at a new receiver answering as `answer`, an onboarded merchant, one
 * request, and `n` events of it recorded in one transaction and not yet relayed. `beforeEvents` runs once the
 * partner exists (e.g. to hold some of its delivery slots). The receiver is the caller's to close.
 */
export async function partnerWithEvents(
  svc: TestService,
  n: number,
  answer: 'hang' | 'ok' | { delayMs: number },
  beforeEvents?: (partnerId: string) => Promise<void>,
): Promise<{ partnerId: string; secret: string; receiver: Receiver; ids: string[]; requestId: string }> {
  const partner = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, partner.testKey);
  const receiver = await Receiver.start();
  if (answer === 'hang') receiver.otherwise({ hang: true });
  else if (answer !== 'ok') receiver.otherwise({ status: 200, delayMs: answer.delayMs });
  const put = await admin(svc, 'PUT', `/partners/${partner.id}/webhook`, { url: receiver.url, enabled: true });
  if (put.status !== 200) throw new Error(`webhook setup answered ${put.status}`);
  await beforeEvents?.(partner.id);
  const request = await mustCreateRequest(svc, partner.testKey, { account_id: m.id, fiat_amount_int: 1234 });
  const outbox = svc.app.get(EventOutbox);
  const ids = await svc.app.get(DataSource).transaction(async (em) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      out.push((await outbox.record(em, { partnerId: partner.id, requestId: request.request_id, event: 'payment.proof_attached', testMode: true })).id);
    }
    return out;
  });
  return { partnerId: partner.id, secret: put.body.secret as string, receiver, ids, requestId: request.request_id };
}
