import { createHash, createHmac } from 'node:crypto';

/** A merchant as the merchants module answers for it (spec §2.2's object, before mapping to JSON). */
export interface Merchant {
  id: string;
  partnerId: string;
  /** The partner's slug: the merchant's home_portal. */
  partnerSlug: string;
  testMode: boolean;
  email: string | null;
  displayName: string | null;
  businessName: string | null;
  country: string | null;
  phone: string | null;
  website: string | null;
  instagram: string | null;
  industry: string | null;
  accountType: 'consumer' | 'business';
  displayCurrency: string;
  walletAddress: string | null;
  onboardingStatus: 'incomplete' | 'complete';
  disabled: boolean;
  createdAt: Date;
  /** Until onboarding is complete, the merchant's link to it; null afterwards. */
  onboardingUrl: string | null;
  /** When that link stops working (a later read shows a new one); null once onboarding is complete. */
  onboardingUrlExpiresAt: Date | null;
}

/** The moment an onboarding link issued at issuedAt stops working. */
export function onboardingLinkExpiresAt(issuedAt: Date, ttlHours: number): Date {
  return new Date(issuedAt.getTime() + ttlHours * 3600_000);
}

export function onboardingLinkExpired(issuedAt: Date, ttlHours: number, now: Date = new Date()): boolean {
  return now.getTime() >= onboardingLinkExpiresAt(issuedAt, ttlHours).getTime();
}

/**
 * The onboarding token is derived, not stored: HMAC(secret, merchant id, random salt). The merchant object
 * must show onboarding_url on every read (spec §2.2), yet the database keeps only the token's SHA-256 for
 * lookup, so a copy of the database alone cannot open anyone's onboarding. A new salt is a new token: that
 * is how an expired link is replaced (the old token's hash no longer matches).
 */
export function onboardingToken(secret: string, merchantId: string, salt: Buffer): string {
  return createHmac('sha256', secret).update(merchantId).update(salt).digest('base64url');
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
