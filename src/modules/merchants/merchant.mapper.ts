import { iso } from '../../common/time';
import type { Merchant } from './merchant';

/** The merchant object of spec §2.2, exactly its fields. */
export function merchantJson(m: Merchant) {
  return {
    merchant_id: m.id,
    email: m.email,
    display_name: m.displayName,
    business_name: m.businessName,
    country: m.country,
    phone: m.phone,
    website: m.website,
    instagram: m.instagram,
    industry: m.industry,
    account_type: m.accountType,
    onboarding_status: m.onboardingStatus,
    wallet_address: m.walletAddress,
    display_currency: m.displayCurrency,
    home_portal: m.partnerSlug,
    disabled: m.disabled,
    created_at: iso(m.createdAt),
    test_mode: m.testMode,
    onboarding_url: m.onboardingUrl,
  };
}

/** One merchant as an API answer; a replayed create says so. */
export function merchantBody(m: Merchant, replay = false) {
  return { ok: true, ...merchantJson(m), ...(replay ? { idempotent_replay: true } : {}) };
}

export function merchantListBody(page: { merchants: Merchant[]; hasMore: boolean; limit: number; offset: number }) {
  return { ok: true, // Each item has carried its own `ok` since the first release; kept so no client sees a change.
    merchants: page.merchants.map((m) => merchantBody(m)), has_more: page.hasMore, limit: page.limit, offset: page.offset };
}
