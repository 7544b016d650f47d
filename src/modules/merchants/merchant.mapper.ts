import { iso } from '../../common/time';
import { onboardingToken, type MerchantRow } from './merchant';

/** The merchant object of spec §2.2, exactly its fields. */
export function toMerchantResponse(m: MerchantRow, publicUrl: string, tokenSecret: string, replay = false): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ok: true,
    merchant_id: m.id,
    email: m.email,
    display_name: m.display_name,
    business_name: m.business_name,
    country: m.country,
    phone: m.phone,
    website: m.website,
    instagram: m.instagram,
    industry: m.industry,
    account_type: m.account_type,
    onboarding_status: m.onboarding_status,
    wallet_address: m.wallet_address,
    display_currency: m.display_currency,
    home_portal: m.partner_slug,
    disabled: m.disabled,
    created_at: iso(m.created_at),
    test_mode: m.test_mode,
    onboarding_url:
      m.onboarding_status === 'complete'
        ? null
        : `${publicUrl}/onboarding/${onboardingToken(tokenSecret, m.id, m.onboarding_token_salt)}`,
  };
  if (replay) body.idempotent_replay = true;
  return body;
}
