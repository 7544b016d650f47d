import { iso } from '../../../common/time';
import { assetId } from '../../chain/asset-id';
import type { PaymentRequest } from '../domain/payment-request';
import { effectiveStatus } from '../domain/transitions';

/** The payment request object of spec §2.1: exactly its fields; memo, payment_mode and customer_* stay inside. */
export function toRequestResponse(r: PaymentRequest, payUrl: string, now: Date, replay = false): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ok: true,
    request_id: r.id,
    status: effectiveStatus(r, now),
    proof_status: r.proofStatus,
    pay_page_url: `${payUrl}/${r.id}`,
    expires_at: iso(r.expiresAt),
    created_at: iso(r.createdAt),
    proof_verified_at: iso(r.proofVerifiedAt),
    tx_hash: r.txHash,
    amount: r.amount.toString(),
    asset_id: assetId(r.chainId, r.tokenAddress),
    fiat_amount: r.fiatAmount,
    fiat_currency: r.fiatCurrency,
    account_id: r.merchantId,
    metadata: r.metadata,
  };
  if (replay) body.idempotent_replay = true;
  return body;
}

/** GET /api/v1/requests: a page of requests. */
export function toRequestList(
  page: { items: PaymentRequest[]; hasMore: boolean; limit: number; offset: number },
  payUrl: string,
  now: Date,
): Record<string, unknown> {
  return { ok: true, requests: page.items.map((r) => toRequestResponse(r, payUrl, now)), has_more: page.hasMore, limit: page.limit, offset: page.offset };
}
