import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { isUniqueViolation } from '../../database/pg-errors';
import { SYSTEM_ACTOR } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { contractCheckElsewhere, SignatureCheckUnavailable, SiweVerifier, type SiweVerdict } from '../chain/siwe-verifier.service';
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
  private readonly logger = new Logger('Onboarding');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MerchantRepository,
    private readonly merchants: MerchantsService,
    private readonly siwe: SiweVerifier,
    private readonly audit: AuditService,
  ) {}

  /** The chain the merchant's payments arrive on, where a contract wallet's signature must be checked. */
  private modeChainId(m: MerchantEntity): bigint | undefined {
    return this.config.chains[m.testMode ? 'test' : 'live']?.chainId;
  }

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
      chainId: this.modeChainId(m)?.toString() ?? null,
      siwe: { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}` },
      merchant: await this.merchants.toMerchant(m),
    };
  }

  /**
   * The wallet step: a Sign-In with Ethereum message for this link, signed by a plain account, an ERC-1271
   * contract wallet (a Safe) or an ERC-6492 counterfactual wallet (DESIGN §5, last sentence of sign-in).
   */
  async proveWallet(token: string, dto: WalletProofDto): Promise<OnboardingState> {
    const m = await this.open(token);
    const nonce = m.onboardingNonce;
    if (!nonce) {
      throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'no nonce was handed out for this link: read the onboarding state first' }] });
    }
    const expected = { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}`, nonce };
    let verdict: SiweVerdict;
    try {
      verdict = await this.siwe.verify(dto.message, dto.signature, expected);
    } catch (e) {
      // A contract wallet's signature the chain could not check: neither accepted nor refused, nothing changes.
      if (e instanceof SignatureCheckUnavailable) throw new AppError('chain_unavailable');
      throw e;
    }
    if (!verdict.valid) throw new AppError('invalid_signature', { errors: [{ field: verdict.field, message: verdict.reason }] });
    const elsewhere = contractCheckElsewhere(verdict, this.modeChainId(m));
    if (elsewhere) throw new AppError('invalid_signature', { errors: [{ field: 'message', message: elsewhere }] });
    const wallet = verdict.address;
    if (m.walletAddress && m.walletAddress !== wallet) {
      throw new AppError('wallet_mismatch', { expected_wallet_address: m.walletAddress });
    }
    await this.takeWallet(m, wallet, nonce);
    return this.state(token);
  }

  /**
   * Sets the proven wallet on merchant `m`, spending `nonce`. Wallets are globally unique (spec §4.5; DESIGN
   * §4: another merchant's wallet → 409), but a create only names one, and a test key costs nothing: a proof
   * for a live merchant wins over test-mode merchants that merely named the wallet and never proved it, which
   * lose it in the same transaction. Else anyone with a sandbox key could keep a wallet from its owner's live
   * merchant for good. A wallet another merchant proved, or a live one named, stays theirs: 409. A test claim
   * committed between the release and the update fails the update; the second round releases it too.
   */
  private async takeWallet(m: MerchantEntity, wallet: string, nonce: string): Promise<void> {
    for (let round = 0; ; round++) {
      try {
        const releasedFrom = await this.merchants.change(m.id, async (em, also) => {
          const from = m.testMode ? [] : await this.repo.releaseTestClaims(em, wallet);
          for (const r of from) {
            await also(r.id);
            // In the losing partner's trail, by the service: who proved it is another partner's business.
            await this.audit.record(em, SYSTEM_ACTOR, {
              partnerId: r.partnerId, action: 'merchant.wallet_released', targetId: r.id,
              details: { test_mode: true, wallet_address: wallet, reason: 'proven by a live merchant' },
            });
          }
          // Spent by a concurrent proof of this link: the release is undone with the rest.
          if (!(await this.repo.proveWallet(em, m.id, wallet, nonce, newNonce()))) throw new NonceSpent();
          return from;
        });
        for (const r of releasedFrom) {
          this.logger.warn(`wallet ${wallet} proven by live merchant ${m.id}: taken off test merchant ${r.id} (partner ${r.partnerId}), which named it at create without proving it; audited`);
        }
        return;
      } catch (e) {
        if (e instanceof NonceSpent) throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'nonce already used' }] });
        if (!isUniqueViolation(e)) throw e;
        if (round > 0 || m.testMode) throw new AppError('wallet_address_conflict');
      }
    }
  }

  async complete(token: string, dto: CompleteOnboardingDto): Promise<{ onboardingStatus: 'complete'; merchant: Merchant }> {
    const m = await this.open(token);
    if (dto.accept_terms !== true) throw new AppError('terms_not_accepted');
    if (!m.walletAddress || !m.walletVerifiedAt) throw new AppError('wallet_required');
    const currency = dto.display_currency ? this.merchants.supportedCurrency(dto.display_currency) : m.displayCurrency;
    const completed = await this.merchants.change(m.id, (em) =>
      this.repo.complete(em, m.id, {
        termsVersion: TERMS_VERSION,
        displayName: dto.display_name,
        businessName: dto.business_name,
        country: dto.country,
        displayCurrency: currency,
      }),
    );
    if (!completed) throw AppError.notFound();
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

/** The nonce a proof signed was spent by a concurrent proof of the same link. */
class NonceSpent extends Error {}

/** SIWE nonces are alphanumeric, at least 8 characters. */
function newNonce(): string {
  return randomBytes(16).toString('hex');
}
