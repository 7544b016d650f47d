import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
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
    await em.query(
      `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, proof_source = 'payer', payer_address = $3,
              proof_attached_at = now(), proof_verified_at = now()
        WHERE id = $1`,
      [r.request_id, `0x${randomBytes(32).toString('hex')}`, `0x${randomBytes(20).toString('hex')}`],
    );
    return svc.app.get(NotificationsOutbox).requestVerified(em, { requestId: r.request_id, merchantId: m.id, customerEmail: customer, customerPhone: null });
  });
  return { id, requestId: r.request_id, partnerId: p.id };
}
