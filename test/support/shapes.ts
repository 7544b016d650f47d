/** Field sets and formats of the spec's objects (spec §2.1, §2.2), for exact-shape assertions. */
export const REQUEST_FIELDS = [
  'ok', 'request_id', 'status', 'proof_status', 'pay_page_url', 'expires_at', 'created_at', 'proof_verified_at',
  'tx_hash', 'amount', 'asset_id', 'fiat_amount', 'fiat_currency', 'account_id', 'metadata',
].sort();

/** A dashboard item (DESIGN §5, §8): the request plus its origin and customer fields, exactly. */
export const DASHBOARD_ITEM_FIELDS = [
  ...REQUEST_FIELDS, 'source', 'plan_id', 'period_index', 'memo', 'customer_name', 'customer_email', 'customer_phone',
].sort();

export const MERCHANT_FIELDS = [
  'ok', 'merchant_id', 'email', 'display_name', 'business_name', 'country', 'phone', 'website', 'instagram',
  'industry', 'account_type', 'onboarding_status', 'wallet_address', 'display_currency', 'home_portal', 'disabled',
  'created_at', 'test_mode', 'onboarding_url',
].sort();

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** UTC, millisecond precision, Z suffix (DESIGN §3). */
export const ISO_MS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function keysOf(o: Record<string, unknown>): string[] {
  return Object.keys(o).sort();
}

/** A body without the replay flag, to compare a replay with the original. */
export function withoutReplay<T extends Record<string, unknown>>(o: T): Omit<T, 'idempotent_replay'> {
  const { idempotent_replay: _r, ...rest } = o;
  return rest;
}
