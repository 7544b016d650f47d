import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, FindOptionsWhere, Repository } from 'typeorm';
import { isCheckViolation } from '../../database/pg-errors';
import { MerchantEntity } from './merchant.entity';

export type NewMerchant = Pick<
  MerchantEntity,
  | 'id' | 'partnerId' | 'testMode' | 'email' | 'displayName' | 'businessName' | 'country' | 'phone' | 'website'
  | 'instagram' | 'industry' | 'accountType' | 'displayCurrency' | 'walletAddress' | 'onboardingTokenSalt' | 'onboardingTokenHash'
>;

/** The merchants table: the only reader and writer of it. */
@Injectable()
export class MerchantRepository {
  constructor(@InjectRepository(MerchantEntity) private readonly merchants: Repository<MerchantEntity>) {}

  /**
   * Inserts unless the wallet is taken: false then (ON CONFLICT DO NOTHING; the id and token hash are random,
   * so the wallet is the only unique value that can collide).
   */
  async insertUnlessWalletTaken(em: EntityManager, m: NewMerchant): Promise<boolean> {
    const r = await em.getRepository(MerchantEntity).createQueryBuilder().insert().into(MerchantEntity).values(m).orIgnore().returning(['id']).execute();
    return (r.raw as unknown[]).length === 1;
  }

  findById(id: string): Promise<MerchantEntity | null> {
    return this.merchants.findOneBy({ id });
  }

  /**
   * The fields a notification names the merchant by and sends its note to; in the caller's transaction when
   * given, and with `share` read FOR SHARE there: a change to the merchant waits for that transaction.
   */
  findContact(id: string, em?: EntityManager, share = false): Promise<Pick<MerchantEntity, 'email' | 'displayName' | 'businessName'> | null> {
    const repo = em ? em.getRepository(MerchantEntity) : this.merchants;
    return repo.findOne({ select: { email: true, displayName: true, businessName: true }, where: { id }, lock: share ? { mode: 'pessimistic_read' } : undefined });
  }

  findByWallet(walletAddress: string): Promise<MerchantEntity | null> {
    return this.merchants.findOneBy({ walletAddress });
  }

  findOwned(partnerId: string, testMode: boolean, id: string): Promise<MerchantEntity | null> {
    return this.merchants.findOneBy({ id, partnerId, testMode });
  }

  /** A page in creation order; one row more than asked tells the caller there is a next page. */
  list(
    partnerId: string,
    testMode: boolean,
    filter: { onboardingStatus?: 'complete' | 'incomplete'; disabled?: boolean },
    take: number,
    skip: number,
  ): Promise<MerchantEntity[]> {
    const where: FindOptionsWhere<MerchantEntity> = { partnerId, testMode };
    if (filter.onboardingStatus) where.onboardingStatus = filter.onboardingStatus;
    if (filter.disabled !== undefined) where.disabled = filter.disabled;
    return this.merchants.find({ where, order: { createdAt: 'ASC', id: 'ASC' }, take, skip });
  }

  /** What request creation reads of a merchant (MerchantDirectory caches it). */
  findForCreate(id: string): Promise<Pick<MerchantEntity, 'id' | 'partnerId' | 'testMode' | 'onboardingStatus' | 'disabled' | 'displayCurrency' | 'walletAddress'> | null> {
    return this.merchants.findOne({
      select: { id: true, partnerId: true, testMode: true, onboardingStatus: true, disabled: true, displayCurrency: true, walletAddress: true },
      where: { id },
    });
  }

  /**
   * Takes the merchant's "holds" lock exclusively until em's transaction ends: request inserts in flight for the
   * merchant finish first, and those that come after wait and then read the merchant as changed (migration
   * 1764000402500). Taken before the change touches the merchant row (one lock order with a plan's insert).
   */
  async lockForChange(em: EntityManager, id: string): Promise<void> {
    await em.query(`SELECT pg_advisory_xact_lock(hashtext('merchants.holds'), hashtext($1::text))`, [id]);
  }

  async setDisabled(em: EntityManager, id: string, disabled: boolean): Promise<{ partnerId: string; testMode: boolean; wasDisabled: boolean } | null> {
    // A top-level UPDATE comes back from query() as [rows, count].
    const [rows] = await em.query<[Array<{ partner_id: string; test_mode: boolean; was_disabled: boolean }>, number]>(
      `UPDATE merchants m SET disabled = $2, updated_at = now()
         FROM (SELECT id, disabled FROM merchants WHERE id = $1 FOR NO KEY UPDATE) old
        WHERE m.id = old.id
       RETURNING m.partner_id, m.test_mode, old.disabled AS was_disabled`,
      [id, disabled],
    );
    const row = rows[0];
    return row ? { partnerId: row.partner_id, testMode: row.test_mode, wasDisabled: row.was_disabled } : null;
  }

  /** The merchant behind a live onboarding token: its hash matches and onboarding is not complete. */
  findOnboarding(tokenHash: Buffer): Promise<MerchantEntity | null> {
    return this.merchants.findOneBy({ onboardingTokenHash: tokenHash, onboardingStatus: 'incomplete' });
  }

  /** The incomplete merchant whose onboarding token was replaced by a newer one (its link expired). */
  findByPreviousOnboarding(tokenHash: Buffer): Promise<MerchantEntity | null> {
    return this.merchants.findOneBy({ onboardingPreviousTokenHash: tokenHash, onboardingStatus: 'incomplete' });
  }

  /**
   * Replaces an expired onboarding token with a new one issued now (by the database's clock). Conditional on
   * the token still being the expired one, so of two reads racing after expiry only one issues a link; the
   * other gets false and re-reads. The nonce handed out with the old link goes with it.
   */
  async reissueOnboardingLink(id: string, expiredHash: Buffer, salt: Buffer, hash: Buffer): Promise<boolean> {
    const r = await this.merchants
      .createQueryBuilder()
      .update(MerchantEntity)
      .set({
        onboardingTokenSalt: salt,
        onboardingTokenHash: hash,
        onboardingPreviousTokenHash: expiredHash,
        onboardingLinkIssuedAt: () => 'now()',
        onboardingNonce: null,
        updatedAt: () => 'now()',
      })
      .where(`id = :id AND onboarding_token_hash = :expiredHash AND onboarding_status = 'incomplete'`, { id, expiredHash })
      .execute();
    return (r.affected ?? 0) > 0;
  }

  /** Sets the first nonce; a concurrent first read may have set one already, and then it stays. */
  async setNonceIfMissing(id: string, nonce: string): Promise<void> {
    await this.merchants
      .createQueryBuilder()
      .update(MerchantEntity)
      .set({ onboardingNonce: nonce })
      .where('id = :id AND onboarding_nonce IS NULL', { id })
      .execute();
  }

  /**
   * Takes `wallet` off every test-mode merchant that only named it at create (never proved it, onboarding not
   * complete). Returns the merchants it was taken from.
   */
  async releaseTestClaims(em: EntityManager, wallet: string): Promise<Array<{ id: string; partnerId: string }>> {
    const rows = await em.query<Array<{ id: string; partner_id: string }>>(
      `WITH released AS (
         UPDATE merchants SET wallet_address = NULL, updated_at = now()
          WHERE wallet_address = $1 AND test_mode AND wallet_verified_at IS NULL AND onboarding_status = 'incomplete'
         RETURNING id, partner_id)
       SELECT * FROM released`,
      [wallet],
    );
    return rows.map((r) => ({ id: r.id, partnerId: r.partner_id }));
  }

  /**
   * Takes the wallet off merchant `id` when it only named it at create (never proved it, onboarding not
   * complete), the row locked for the change. Returns what it was; null when there was nothing to release.
   */
  async releaseNamedWallet(em: EntityManager, id: string): Promise<{ partnerId: string; testMode: boolean; wallet: string } | null> {
    const rows = await em.query<Array<{ partner_id: string; test_mode: boolean; wallet_address: string }>>(
      `WITH old AS (SELECT id, wallet_address FROM merchants WHERE id = $1 FOR NO KEY UPDATE)
       , released AS (
         UPDATE merchants m SET wallet_address = NULL, updated_at = now()
           FROM old
          WHERE m.id = old.id AND m.wallet_address IS NOT NULL AND m.wallet_verified_at IS NULL AND m.onboarding_status = 'incomplete'
         RETURNING m.partner_id, m.test_mode, old.wallet_address)
       SELECT * FROM released`,
      [id],
    );
    const r = rows[0];
    return r ? { partnerId: r.partner_id, testMode: r.test_mode, wallet: r.wallet_address } : null;
  }

  /**
   * Records the proven wallet and replaces the nonce. The nonce is single use: the UPDATE only wins while it
   * still holds the nonce that was signed (false otherwise). A unique violation when another merchant has the wallet.
   */
  async proveWallet(em: EntityManager, id: string, wallet: string, signedNonce: string, nextNonce: string): Promise<boolean> {
    const r = await em
      .getRepository(MerchantEntity)
      .createQueryBuilder()
      .update(MerchantEntity)
      .set({ walletAddress: wallet, walletVerifiedAt: () => 'now()', onboardingNonce: nextNonce, updatedAt: () => 'now()' })
      .where(`id = :id AND onboarding_nonce = :signedNonce AND onboarding_status = 'incomplete'`, { id, signedNonce })
      .execute();
    return (r.affected ?? 0) > 0;
  }

  /** Completes onboarding once: false when it already was. Absent fields keep their value. */
  async complete(
    em: EntityManager,
    id: string,
    f: { termsVersion: string; displayName?: string; businessName?: string; country?: string; displayCurrency: string },
  ): Promise<boolean> {
    const r = await em
      .getRepository(MerchantEntity)
      .createQueryBuilder()
      .update(MerchantEntity)
      .set({
        onboardingStatus: 'complete',
        termsVersion: f.termsVersion,
        termsAcceptedAt: () => 'now()',
        ...(f.displayName != null ? { displayName: f.displayName } : {}),
        ...(f.businessName != null ? { businessName: f.businessName } : {}),
        ...(f.country != null ? { country: f.country } : {}),
        displayCurrency: f.displayCurrency,
        onboardingNonce: null,
        updatedAt: () => 'now()',
      })
      .where(`id = :id AND onboarding_status = 'incomplete'`, { id })
      .execute();
    return (r.affected ?? 0) > 0;
  }

  /**
   * The merchant's own settings (the dashboard): absent fields keep their value, null clears. 'not_found' when no
   * such merchant; 'currency_in_use' when the currency would change while a plan that can still charge is in
   * the current one (the schema's merchants_currency_keeps_plans rule; em's transaction is then aborted).
   */
  async updateProfile(em: EntityManager, id: string, patch: MerchantProfilePatch): Promise<'updated' | 'not_found' | 'currency_in_use'> {
    const repo = em.getRepository(MerchantEntity);
    const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    if (Object.keys(set).length === 0) return (await repo.existsBy({ id })) ? 'updated' : 'not_found';
    try {
      const r = await repo.update({ id }, { ...set, updatedAt: () => 'now()' });
      return (r.affected ?? 0) > 0 ? 'updated' : 'not_found';
    } catch (e) {
      if (isCheckViolation(e, 'merchants_currency_keeps_plans')) return 'currency_in_use';
      throw e;
    }
  }
}

/** What a merchant may change of itself (DESIGN §5 PATCH /dashboard/api/me). */
export type MerchantProfilePatch = Partial<
  Pick<MerchantEntity, 'displayName' | 'businessName' | 'email' | 'phone' | 'website' | 'instagram' | 'industry' | 'country'>
> & { displayCurrency?: string };
