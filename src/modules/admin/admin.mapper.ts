import { iso } from '../../common/time';
import type { ApiKeyInfo, IssuedKey } from '../auth/api-key';
import type { RateRow } from '../rates/rates.service';
import type { Partner } from '../partners/partner';

/** The admin API's JSON bodies (DESIGN §4): the only place that knows their field names and the envelope. */
export function partnerBody(p: Partner, webhook: { url: string | null; enabled: boolean }) {
  return {
    ok: true,
    partner_id: p.id,
    slug: p.slug,
    name: p.name,
    default_currency: p.defaultCurrency,
    allowed_expiry_minutes: p.allowedExpiryMinutes,
    default_expiry_minutes: p.defaultExpiryMinutes,
    webhook_url: webhook.url,
    webhook_enabled: webhook.enabled,
    created_at: iso(p.createdAt),
  };
}

export function issuedKeyBody(k: IssuedKey) {
  return {
    ok: true, key_id: k.id, api_key: k.apiKey, mode: k.mode, scopes: k.scopes, label: k.label,
    display_prefix: k.displayPrefix, created_at: iso(k.createdAt),
  };
}

export function keysBody(keys: ApiKeyInfo[]) {
  return {
    ok: true,
    keys: keys.map((k) => ({
      key_id: k.id, mode: k.mode, scopes: k.scopes, display_prefix: k.displayPrefix, label: k.label,
      created_at: iso(k.createdAt), revoked_at: iso(k.revokedAt),
    })),
  };
}

export function revokedKeyBody(r: { id: string; revokedAt: Date }) {
  return { ok: true, key_id: r.id, revoked_at: iso(r.revokedAt) };
}

export function ratesBody(rows: RateRow[]) {
  return {
    ok: true,
    rates: rows.map((r) => ({ currency: r.currency, rate: r.rate, source: r.source, updated_at: iso(r.updated_at) })),
  };
}
