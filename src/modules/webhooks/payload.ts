import { signWebhook } from '../../../sdk/webhook-verify/src/index';
import type { EventKind } from './event-outbox';

/** What one attempt is built from: the outbox row and the request as stored at the moment of the attempt. */
export interface DeliverySource {
  eventId: string;
  event: EventKind;
  partnerId: string;
  requestId: string;
  merchantId: string;
  proofStatus: string;
  proofSource: string | null;
  txHash: string | null;
  payerAddress: string | null;
  metadata: Record<string, unknown> | null;
  recordedAt: Date;
  testMode: boolean;
}

export const WEBHOOK_USER_AGENT = 'Service-Webhook/1.0';

/**
 * The JSON body of spec §6.3 plus test_mode (DESIGN §3). event, delivery_id and timestamp are fixed when the
 * event is recorded; the other fields reflect the stored request at each attempt. Key order is fixed.
 */
export function webhookBody(s: DeliverySource): string {
  return JSON.stringify({
    event: s.event,
    delivery_id: s.eventId,
    partner_id: s.partnerId,
    request_id: s.requestId,
    account_id: s.merchantId,
    proof_status: s.proofStatus,
    proof_source: s.proofSource,
    tx_hash: s.txHash,
    payer_address: s.payerAddress,
    metadata: s.metadata,
    timestamp: s.recordedAt.toISOString(),
    test_mode: s.testMode,
  });
}

/**
 * The headers of spec §6.2, signed over the exact body bytes with t = now (so a retry hours later still
 * passes the receiver's 5-minute check). `secrets` is [current] or, during an unconfirmed rotation,
 * [new, old]: one v1= per secret, the new first.
 */
export function webhookHeaders(s: DeliverySource, body: string, secrets: string[], unixSeconds: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-service-signature': signWebhook(body, secrets, unixSeconds),
    'x-service-event': s.event,
    'x-service-delivery': s.eventId,
    'user-agent': WEBHOOK_USER_AGENT,
  };
}
