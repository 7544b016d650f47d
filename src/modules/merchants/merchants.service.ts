import { randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { AppError } from '../../common/errors';
import { isUuid } from '../../common/ids';
import { PartnersService } from '../partners/partners.service';
import { RatesService } from '../rates/rates.service';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { MerchantDirectory } from './merchant-directory';
import type { Principal } from '../auth/api-key';
import { ApiKeyService } from '../auth/api-key.service';
import type { CreateMerchantDto, ListMerchantsQuery } from './merchant.dto';
import { hashToken, onboardingLinkExpired, onboardingLinkExpiresAt, onboardingToken, type Merchant } from './merchant';
import type { MerchantEntity } from './merchant.entity';
import { MerchantRepository, type MerchantProfilePatch } from './merchant.repository';

const PAGE_DEFAULT = 50;

export interface MerchantPage {
  merchants: Merchant[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

@Injectable()
export class MerchantsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: MerchantRepository,
    private readonly partners: PartnersService,
    private readonly rates: RatesService,
    private readonly directory: MerchantDirectory,
    private readonly audit: AuditService,
    private readonly keys: ApiKeyService,
  ) {}

  /** A supported display currency in lower case, or a 400 naming the field (RatesService's rule). */
  supportedCurrency(code: string, field = 'display_currency'): string {
    return this.rates.supportedCurrency(code, field);
  }

  /**
   * Spec §4.5: idempotent on wallet_address within a partner and mode; wallets are globally unique. The insert
   * commits only while the calling key is live (401 once it is revoked).
   */
  async create(p: Principal, dto: CreateMerchantDto): Promise<{ merchant: Merchant; created: boolean }> {
    const currency = this.supportedCurrency(dto.display_currency ?? p.defaultCurrency);
    const id = randomUUID();
    const salt = randomBytes(32);
    const inserted = await this.keys.whileLive(p.keyId, (em) => this.repo.insertUnlessWalletTaken(em, {
      id,
      partnerId: p.partnerId,
      testMode: p.mode === 'test',
      email: dto.email ?? null,
      displayName: dto.display_name ?? null,
      businessName: dto.business_name ?? null,
      country: dto.country ?? null,
      phone: dto.phone ?? null,
      website: dto.website ?? null,
      instagram: dto.instagram ?? null,
      industry: dto.industry ?? null,
      accountType: dto.account_type ?? 'consumer',
      displayCurrency: currency,
      walletAddress: dto.wallet_address ?? null,
      onboardingTokenSalt: salt,
      onboardingTokenHash: hashToken(onboardingToken(this.config.onboardingTokenSecret, id, salt)),
    }));
    if (inserted) return { merchant: await this.mustLoad(id), created: true };
    // The wallet is taken: a replay when it is this partner's merchant in this mode, a conflict otherwise.
    const owner = dto.wallet_address ? await this.repo.findByWallet(dto.wallet_address) : null;
    if (owner && owner.partnerId === p.partnerId && owner.testMode === (p.mode === 'test')) {
      return { merchant: await this.toMerchant(owner), created: false };
    }
    throw new AppError('wallet_address_conflict');
  }

  /** One merchant of this partner in this key's mode; anything else is an indistinguishable 404. */
  async get(p: Principal, id: string): Promise<Merchant> {
    const m = await this.findOwned(p.partnerId, p.mode, id);
    if (!m) throw AppError.notFound();
    return m;
  }

  async findOwned(partnerId: string, mode: Mode, id: string): Promise<Merchant | null> {
    // account_id comes from a request body, not a route: a malformed one is simply not found.
    if (!isUuid(id)) return null;
    const m = await this.repo.findOwned(partnerId, mode === 'test', id);
    return m ? this.toMerchant(m) : null;
  }

  async list(p: Pick<Principal, 'partnerId' | 'mode'>, q: ListMerchantsQuery): Promise<MerchantPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const rows = await this.repo.list(p.partnerId, p.mode === 'test', { onboardingStatus: q.onboarding_status, disabled: q.disabled }, limit + 1, offset);
    const merchants = await Promise.all(rows.slice(0, limit).map((m) => this.toMerchant(m)));
    return { merchants, hasMore: rows.length > limit, limit, offset };
  }

  /**
   * The merchant a dashboard sign-in names: the one that completed onboarding with this wallet, in either mode
   * (wallets are globally unique). Disabled merchants included: their dashboard stays reachable (spec §2.2).
   */
  async signedInBy(wallet: string): Promise<Merchant | null> {
    const m = await this.repo.findByWallet(wallet.toLowerCase());
    return m && m.onboardingStatus === 'complete' && m.walletVerifiedAt ? this.toMerchant(m) : null;
  }

  /**
   * The merchant's own settings change (dashboard, validated as spec §4.5); create's cache hears of it. A new
   * currency while a plan that can still charge is in the old one → 409 currency_in_use, and nothing changes.
   */
  async updateProfile(id: string, patch: MerchantProfilePatch): Promise<Merchant> {
    const p = { ...patch };
    if (p.displayCurrency !== undefined) p.displayCurrency = this.supportedCurrency(p.displayCurrency);
    const outcome = await this.change(id, async (em) => {
      const r = await this.repo.updateProfile(em, id, p);
      // Thrown inside, so the change's transaction rolls back (the refused UPDATE has aborted it anyway).
      if (r === 'currency_in_use') throw new AppError('currency_in_use');
      return r;
    });
    if (outcome === 'not_found') throw AppError.notFound();
    return this.mustLoad(id);
  }

  /**
   * Runs a change of what create reads of this merchant (disabled, wallet, onboarding, currency) in one
   * transaction that tells every instance's merchant cache at commit (MerchantDirectory).
   */
  change<T>(id: string, work: (em: EntityManager, also: (otherId: string) => Promise<void>) => Promise<T>): Promise<T> {
    return this.directory.change(id, work);
  }

  /** Admin: disable or enable any merchant. */
  async setDisabled(id: string, disabled: boolean, actor: Actor): Promise<Merchant> {
    const done = await this.change(id, async (em) => {
      const before = await this.repo.setDisabled(em, id, disabled);
      if (before) {
        await this.audit.record(em, actor, {
          partnerId: before.partnerId, action: disabled ? 'merchant.disabled' : 'merchant.enabled', targetId: id,
          details: { test_mode: before.testMode, was_disabled: before.wasDisabled },
        });
      }
      return before;
    });
    if (!done) throw AppError.notFound();
    return this.mustLoad(id);
  }

  /**
   * Admin: takes a wallet off a merchant that only named it at create and never proved it, so that its owner
   * can onboard it elsewhere (a partner named someone else's wallet). A proven wallet is its merchant's: 409.
   */
  async releaseWallet(id: string, actor: Actor): Promise<Merchant> {
    const released = await this.change(id, async (em) => {
      const r = await this.repo.releaseNamedWallet(em, id);
      if (r) {
        await this.audit.record(em, actor, {
          partnerId: r.partnerId, action: 'merchant.wallet_released', targetId: id, details: { test_mode: r.testMode, wallet_address: r.wallet },
        });
      }
      return r;
    });
    if (!released) {
      const m = await this.repo.findById(id);
      if (!m) throw AppError.notFound();
      const why = m.walletAddress === null ? 'the merchant names no wallet' : 'the merchant proved this wallet: it is theirs';
      throw new AppError('conflict', { errors: [{ field: 'merchant_id', message: why }] });
    }
    return this.mustLoad(id);
  }

  async mustLoad(id: string): Promise<Merchant> {
    const m = await this.repo.findById(id);
    if (!m) throw AppError.notFound();
    return this.toMerchant(m);
  }

  /**
   * The merchant with its home portal and, until onboarding is complete, its onboarding link. Every read
   * shows a link that works (issue 10 point 4): one that has expired is replaced here by a new token, and
   * the old one stops working.
   */
  async toMerchant(entity: MerchantEntity): Promise<Merchant> {
    const e = await this.withWorkingLink(entity);
    const incomplete = e.onboardingStatus !== 'complete';
    return {
      id: e.id,
      partnerId: e.partnerId,
      partnerSlug: await this.partners.slugOf(e.partnerId),
      testMode: e.testMode,
      email: e.email,
      displayName: e.displayName,
      businessName: e.businessName,
      country: e.country,
      phone: e.phone,
      website: e.website,
      instagram: e.instagram,
      industry: e.industry,
      accountType: e.accountType,
      displayCurrency: e.displayCurrency,
      walletAddress: e.walletAddress,
      onboardingStatus: e.onboardingStatus,
      disabled: e.disabled,
      createdAt: e.createdAt,
      onboardingUrl: incomplete
        ? `${this.config.publicUrl}/onboarding/${onboardingToken(this.config.onboardingTokenSecret, e.id, e.onboardingTokenSalt)}`
        : null,
      onboardingUrlExpiresAt: incomplete ? onboardingLinkExpiresAt(e.onboardingLinkIssuedAt, this.config.onboardingLinkTtlHours) : null,
    };
  }

  /** The row as it is once an expired onboarding link has been replaced (by this read or a racing one). */
  private async withWorkingLink(e: MerchantEntity): Promise<MerchantEntity> {
    if (e.onboardingStatus === 'complete' || !onboardingLinkExpired(e.onboardingLinkIssuedAt, this.config.onboardingLinkTtlHours)) return e;
    const salt = randomBytes(32);
    const hash = hashToken(onboardingToken(this.config.onboardingTokenSecret, e.id, salt));
    await this.repo.reissueOnboardingLink(e.id, e.onboardingTokenHash, salt, hash);
    // Whether this read or a concurrent one issued it, the row now holds the current link.
    return (await this.repo.findById(e.id)) ?? e;
  }
}
