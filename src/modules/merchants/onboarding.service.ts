import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SiweMessage } from 'siwe';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { isUniqueViolation } from '../../database/pg-errors';
import { hashToken, onboardingLinkExpired, type Merchant } from './merchant';
import type { MerchantEntity } from './merchant.entity';
import { MerchantRepository } from './merchant.repository';
import { MerchantsService } from './merchants.service';
import type { CompleteOnboardingDto, WalletProofDto } from './onboarding.dto';

export const TERMS_VERSION = '2026-11-01';

/** What the onboarding page and its API show of a merchant's onboarding. */
export interface OnboardingState {
  merchantId: string;
  onboardingStatus: 'incomplete' | 'complete';
  walletAddress: string | null;
  walletVerified: boolean;
  nonce: string | null;
  termsVersion: string;
  /** The network this merchant's payments arrive on: the onboarding page asks the wallet to use it. */
  chainId: string | null;
  siwe: { domain: string; uri: string };
  merchant: Merchant;
}

/**
 * The merchant's side of provisioning (DESIGN §4): prove the wallet with a Sign-In with Ethereum message,
 * accept the terms, done. The token stops working once onboarding is complete.
 */
@Injectable()
export class OnboardingService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MerchantRepository,
    private readonly merchants: MerchantsService,
  ) {}

  private get onboardingBase(): string {
    return `${this.config.publicUrl}/onboarding/`;
  }

  async state(token: string): Promise<OnboardingState> {
    let m = await this.open(token);
    if (!m.onboardingNonce) {
      await this.repo.setNonceIfMissing(m.id, newNonce());
      m = await this.open(token);
    }
    return {
      merchantId: m.id,
      onboardingStatus: m.onboardingStatus,
      walletAddress: m.walletAddress,
      walletVerified: m.walletVerifiedAt !== null,
      nonce: m.onboardingNonce,
      termsVersion: TERMS_VERSION,
      chainId: this.config.chains[m.testMode ? 'test' : 'live']?.chainId.toString() ?? null,
      siwe: { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}` },
      merchant: await this.merchants.toMerchant(m),
    };
  }

  async proveWallet(token: string, dto: WalletProofDto): Promise<OnboardingState> {
    const m = await this.open(token);
    let siwe: SiweMessage;
    try {
      siwe = new SiweMessage(dto.message);
    } catch {
      throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'not an EIP-4361 message' }] });
    }
    const expected = { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}` };
    if (siwe.domain !== expected.domain || siwe.uri !== expected.uri || !m.onboardingNonce || siwe.nonce !== m.onboardingNonce) {
      throw new AppError('invalid_signature', {
        errors: [{ field: 'message', message: 'domain, uri or nonce does not match this onboarding link' }],
      });
    }
    try {
      const result = await siwe.verify({ signature: dto.signature, domain: expected.domain, nonce: m.onboardingNonce });
      if (!result.success) throw new Error('verification failed');
    } catch {
      throw new AppError('invalid_signature', { errors: [{ field: 'signature', message: 'signature does not match the message' }] });
    }
    const wallet = siwe.address.toLowerCase();
    if (m.walletAddress && m.walletAddress !== wallet) {
      throw new AppError('wallet_mismatch', { expected_wallet_address: m.walletAddress });
    }
    let won: boolean;
    try {
      won = await this.repo.proveWallet(m.id, wallet, m.onboardingNonce, newNonce());
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('wallet_address_conflict');
      throw e;
    }
    if (!won) throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'nonce already used' }] });
    await this.merchants.changed(m.id);
    return this.state(token);
  }

  async complete(token: string, dto: CompleteOnboardingDto): Promise<{ onboardingStatus: 'complete'; merchant: Merchant }> {
    const m = await this.open(token);
    if (dto.accept_terms !== true) throw new AppError('terms_not_accepted');
    if (!m.walletAddress || !m.walletVerifiedAt) throw new AppError('wallet_required');
    const currency = dto.display_currency ? this.merchants.supportedCurrency(dto.display_currency) : m.displayCurrency;
    const completed = await this.repo.complete(m.id, {
      termsVersion: TERMS_VERSION,
      displayName: dto.display_name,
      businessName: dto.business_name,
      country: dto.country,
      displayCurrency: currency,
    });
    if (!completed) throw AppError.notFound();
    await this.merchants.changed(m.id);
    return { onboardingStatus: 'complete', merchant: await this.merchants.mustLoad(m.id) };
  }

  /**
   * The merchant behind a live token. A token past ONBOARDING_LINK_TTL_HOURS, or one already replaced by a
   * newer link, is 410 onboarding_link_expired (the partner can show a new link); an unknown, malformed or
   * spent (onboarding complete) token stays a plain 404.
   */
  private async open(token: string): Promise<MerchantEntity> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) throw AppError.notFound();
    const hash = hashToken(token);
    const m = await this.repo.findOnboarding(hash);
    if (m && !onboardingLinkExpired(m.onboardingLinkIssuedAt, this.config.onboardingLinkTtlHours)) return m;
    if (m || (await this.repo.findByPreviousOnboarding(hash))) throw new AppError('onboarding_link_expired');
    throw AppError.notFound();
  }
}

/** SIWE nonces are alphanumeric, at least 8 characters. */
function newNonce(): string {
  return randomBytes(16).toString('hex');
}
