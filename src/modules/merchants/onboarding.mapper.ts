import { merchantJson } from './merchant.mapper';
import type { Merchant } from './merchant';
import type { OnboardingState } from './onboarding.service';

/** GET /onboarding/api/:token (and the answer to a wallet proof), DESIGN §4; the onboarding page reads the same. */
export function onboardingBody(s: OnboardingState) {
  return {
    ok: true,
    merchant_id: s.merchantId,
    onboarding_status: s.onboardingStatus,
    wallet_address: s.walletAddress,
    wallet_verified: s.walletVerified,
    nonce: s.nonce,
    terms_version: s.termsVersion,
    chain_id: s.chainId,
    siwe: s.siwe,
    merchant: { ok: true, ...merchantJson(s.merchant) },
  };
}

export function onboardingCompleteBody(r: { onboardingStatus: 'complete'; merchant: Merchant }) {
  return { ok: true, onboarding_status: r.onboardingStatus, merchant: { ok: true, ...merchantJson(r.merchant) } };
}
