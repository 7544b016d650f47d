import { randomBytes } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import { NotificationsOutbox } from '../../src/modules/notifications/notifications-outbox';
import type { TestService } from '../support/app';
import { createOnboardedMerchant, createPartner } from './partners';
import { mustCreateRequest } from './requests';

/**
 * A new partner's request, verified, with its receipt to `customer` written to the outbox in that same
 * transaction, as verification does (not relayed: the caller relays or drives it).
 */
export async function verifiedReceipt(svc: TestService, customer: string): Promise<{ id: string; requestId: string; partnerId: string }> {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 1999, customer_email: customer });
  const [id] = await svc.app.get(DataSource).transaction(async (em) => {
    await markVerified(em, r.request_id);
    return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId: r.request_id, merchantId: m.id, customerEmail: customer, customerPhone: null });
  });
  return { id, requestId: r.request_id, partnerId: p.id };
}

/**
 * Marks a request verified by a made-up transaction, in `em` (the transaction that writes its receipt, as
 * verification does): a receipt is only sent for a verified request. Its claim is settled, so a worker's
 * finality job never looks for the made-up transaction on the chain (it would find it gone and lose the claim).
 */
export async function markVerified(em: EntityManager, requestId: string): Promise<void> {
  await em.query(
    `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, proof_source = 'payer', payer_address = $3,
            proof_attached_at = now(), proof_verified_at = now(), claim_settled_at = now()
      WHERE id = $1`,
    [requestId, `0x${randomBytes(32).toString('hex')}`, `0x${randomBytes(20).toString('hex')}`],
  );
}
