import { randomBytes } from 'node:crypto';
import type { TestService } from '../support/app';
import { call, type Reply } from '../support/http';

/** A valid idempotency key: 48 base64url characters. */
export function idemKey(): string {
  return randomBytes(36).toString('base64url');
}

export function createRequest(svc: TestService, key: string, body: unknown): Promise<Reply> {
  return call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, body });
}

/** Creates a request and throws unless it was created (201). */
export async function mustCreateRequest(svc: TestService, key: string, body: Record<string, unknown>): Promise<any> {
  const r = await createRequest(svc, key, body);
  if (r.status !== 201) throw new Error(`request create failed: ${r.status} ${r.text}`);
  return r.body;
}

const COPIED = `partner_id, merchant_id, test_mode, fiat_amount, fiat_currency, rate, chain_id, token_address, recipient,
  memo, payment_mode, customer_name, customer_email, customer_phone, metadata, expires_at, claim_until, source`;

/**
 * SQL inserting a copy of request $4 straight into payment_requests (through its insert trigger, as the
 * service's inserts go): id $1, idempotency key $2, its amount plus $3 (held amounts are unique per
 * merchant). Returns the copy's created_at.
 */
export const COPY_REQUEST_SQL = `INSERT INTO payment_requests (id, idempotency_key, amount, ${COPIED})
  SELECT $1, $2, amount + $3, ${COPIED} FROM payment_requests WHERE id = $4
  RETURNING created_at`;
