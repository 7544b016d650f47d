import { iso } from '../../common/time';
import { assetId } from '../chain/asset-id';
import { merchantJson } from '../merchants/merchant.mapper';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { effectiveStatus } from '../requests/domain/transitions';
import { toRequestResponse } from '../requests/http/request.mapper';
import type { MerchantSettings } from './dashboard.service';

/** A dashboard item (DESIGN §5, §8): spec §2.1's object plus where it came from and the customer fields. */
export function dashboardItem(r: PaymentRequest, payUrl: string, now: Date, replay = false): Record<string, unknown> {
  return {
    ...toRequestResponse(r, payUrl, now, replay),
    source: r.source,
    plan_id: r.planId,
    period_index: r.periodIndex,
    memo: r.memo,
    customer_name: r.customerName,
    customer_email: r.customerEmail,
    customer_phone: r.customerPhone,
  };
}

/** A token a dashboard amount may be priced in, as GET /dashboard/api/assets lists it. */
export interface DashboardAsset {
  assetId: string;
  symbol: string;
  decimals: number;
}

/** GET /dashboard/api/assets: how to read an item's `amount` (base units) as "12.34 USDC". */
export function assetsBody(assets: DashboardAsset[]) {
  return { ok: true, assets: assets.map((a) => ({ asset_id: a.assetId, symbol: a.symbol, decimals: a.decimals })) };
}

/** GET /dashboard/api/me: spec §2.2's merchant without onboarding_url, plus the handle and what can be sent. */
export function meBody(settings: MerchantSettings) {
  const { onboarding_url: _omitted, ...fields } = merchantJson(settings.merchant);
  return {
    ok: true,
    ...fields,
    handle: settings.handle,
    handle_url: settings.handleUrl,
    email_enabled: settings.emailEnabled,
    sms_enabled: settings.smsEnabled,
  };
}

export const CSV_COLUMNS = [
  'request_id', 'created_at', 'status', 'proof_status', 'fiat_amount', 'fiat_currency', 'amount', 'asset_id', 'tx_hash',
  'proof_verified_at', 'source', 'plan_id', 'memo',
] as const;

/** RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled; null is an empty field. */
export function csvField(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * Free text a spreadsheet must not run as a formula (OWASP "CSV injection"): a cell starting with =, +, -, @,
 * TAB or CR gets a leading '. Only for free-text columns (memo): ids, amounts, codes and timestamps never
 * start with those (no amount is negative), and they stay exactly as the API shows them.
 */
export function csvText(v: string | null): string | null {
  return v !== null && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

/** One CSV record (CRLF-terminated, RFC 4180), timestamps as the API shows them. */
export function csvRow(r: PaymentRequest, now: Date): string {
  return [
    r.id, iso(r.createdAt), effectiveStatus(r, now), r.proofStatus, r.fiatAmount, r.fiatCurrency, r.amount.toString(),
    assetId(r.chainId, r.tokenAddress), r.txHash, iso(r.proofVerifiedAt), r.source, r.planId, csvText(r.memo),
  ].map(csvField).join(',') + '\r\n';
}

/** The records of each batch of requests, as one chunk per batch. */
export async function* csvRows(batches: AsyncIterable<PaymentRequest[]>): AsyncGenerator<string> {
  for await (const batch of batches) {
    const now = new Date();
    yield batch.map((r) => csvRow(r, now)).join('');
  }
}

export const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;
