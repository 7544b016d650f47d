import { iso } from '../../common/time';
import { assetId } from '../chain/asset-id';
import type { TokenInfo } from '../chain/asset-registry';
import { merchantJson } from '../merchants/merchant.mapper';
import { formatTokenUnits } from '../pages/format';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { effectiveStatus } from '../requests/domain/transitions';
import { toRequestResponse } from '../requests/http/request.mapper';
import type { MerchantSettings } from './dashboard.service';

/** The token of a request, as the dashboard looks it up (DashboardService.tokenLookup). */
export type TokenOf = (r: PaymentRequest) => Promise<TokenInfo | null>;

/**
 * A dashboard item (DESIGN §5, §8): spec §2.1's object plus where it came from, the customer fields, and
 * `token` ({symbol, decimals}, null when the token was never read): `amount` stays in base units as the
 * partner sees it, and with `token` a page shows it exactly as "12.34 USDC".
 */
export function dashboardItem(r: PaymentRequest, token: TokenInfo | null, payUrl: string, now: Date, replay = false): Record<string, unknown> {
  return {
    ...toRequestResponse(r, payUrl, now, replay),
    token: token ? { symbol: token.symbol, decimals: token.decimals } : null,
    source: r.source,
    plan_id: r.planId,
    period_index: r.periodIndex,
    memo: r.memo,
    customer_name: r.customerName,
    customer_email: r.customerEmail,
    customer_phone: r.customerPhone,
  };
}

/** Several requests as dashboard items, each with its token. */
export function dashboardItems(rs: PaymentRequest[], tokenOf: TokenOf, payUrl: string, now: Date): Promise<Record<string, unknown>[]> {
  return Promise.all(rs.map(async (r) => dashboardItem(r, await tokenOf(r), payUrl, now)));
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

/**
 * DESIGN §5's columns in their order (`amount` in base units, as the API), then two added at the end so a
 * file read by column position keeps working: `amount_decimal`, the same amount in tokens, exact and without
 * grouping ("12.34"), and `token_symbol`; both empty when the token was never read.
 */
export const CSV_COLUMNS = [
  'request_id', 'created_at', 'status', 'proof_status', 'fiat_amount', 'fiat_currency', 'amount', 'asset_id', 'tx_hash',
  'proof_verified_at', 'source', 'plan_id', 'memo', 'amount_decimal', 'token_symbol',
] as const;

/** RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled; null is an empty field. */
export function csvField(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * Free text a spreadsheet must not run as a formula (OWASP "CSV injection"): a cell starting with =, +, -, @,
 * TAB or CR gets a leading '. Only for free-text columns (memo, and token_symbol, which a token contract
 * chose): ids, amounts, codes and timestamps never start with those (no amount is negative), and they stay
 * exactly as the API shows them.
 */
export function csvText(v: string | null): string | null {
  return v !== null && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

/** One CSV record (CRLF-terminated, RFC 4180), timestamps as the API shows them. */
export function csvRow(r: PaymentRequest, token: TokenInfo | null, now: Date): string {
  return [
    r.id, iso(r.createdAt), effectiveStatus(r, now), r.proofStatus, r.fiatAmount, r.fiatCurrency, r.amount.toString(),
    assetId(r.chainId, r.tokenAddress), r.txHash, iso(r.proofVerifiedAt), r.source, r.planId, csvText(r.memo),
    token ? formatTokenUnits(r.amount, token.decimals, false) : null, csvText(token?.symbol ?? null),
  ].map(csvField).join(',') + '\r\n';
}

/** The records of each batch of requests, as one chunk per batch. */
export async function* csvRows(batches: AsyncIterable<PaymentRequest[]>, tokenOf: TokenOf): AsyncGenerator<string> {
  for await (const batch of batches) {
    const now = new Date();
    const tokens = await Promise.all(batch.map(tokenOf));
    yield batch.map((r, i) => csvRow(r, tokens[i], now)).join('');
  }
}

export const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;
