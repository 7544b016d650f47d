import { createHash, createHmac } from 'node:crypto';

export interface MerchantRow {
  id: string;
  partner_id: string;
  partner_slug: string;
  test_mode: boolean;
  email: string | null;
  display_name: string | null;
  business_name: string | null;
  country: string | null;
  phone: string | null;
  website: string | null;
  instagram: string | null;
  industry: string | null;
  account_type: 'consumer' | 'business';
  display_currency: string;
  wallet_address: string | null;
  onboarding_status: 'incomplete' | 'complete';
  onboarding_token_salt: Buffer;
  disabled: boolean;
  created_at: Date;
}

/** The columns every merchant read selects, with the partner slug for home_portal. */
export const MERCHANT_COLUMNS = `m.id, m.partner_id, p.slug AS partner_slug, m.test_mode, m.email, m.display_name,
  m.business_name, m.country, m.phone, m.website, m.instagram, m.industry, m.account_type, m.display_currency,
  m.wallet_address, m.onboarding_status, m.onboarding_token_salt, m.disabled, m.created_at`;

/**
 * The onboarding token is derived, not stored: HMAC(secret, merchant id, random salt). The merchant object
 * must show onboarding_url on every read (spec §2.2), yet the database keeps only the token's SHA-256 for
 * lookup, so a copy of the database alone cannot open anyone's onboarding.
 */
export function onboardingToken(secret: string, merchantId: string, salt: Buffer): string {
  return createHmac('sha256', secret).update(merchantId).update(salt).digest('base64url');
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
