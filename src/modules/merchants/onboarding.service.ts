import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SiweMessage } from 'siwe';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { Db, isUniqueViolation } from '../../database/db';
import { hashToken, MERCHANT_COLUMNS, type MerchantRow } from './merchant';
import { MerchantsService } from './merchants.service';
import type { CompleteOnboardingDto, WalletProofDto } from './onboarding.dto';

export const TERMS_VERSION = '2026-11-01';

interface OnboardingRow extends MerchantRow {
  onboarding_nonce: string | null;
  wallet_verified_at: Date | null;
}

/**
 * The merchant's side of provisioning (DESIGN §4): prove the wallet with a Sign-In with Ethereum message,
 * accept the terms, done. The token stops working once onboarding is complete.
 */
@Injectable()
export class OnboardingService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly merchants: MerchantsService,
  ) {}

  private get onboardingBase(): string {
    return `${this.config.publicUrl}/onboarding/`;
  }

  async state(token: string): Promise<Record<string, unknown>> {
    const m = await this.open(token);
    let nonce = m.onboarding_nonce;
    if (!nonce) {
      nonce = newNonce();
      await this.db.query(`UPDATE merchants SET onboarding_nonce = $2 WHERE id = $1 AND onboarding_nonce IS NULL`, [m.id, nonce]);
      nonce = (await this.open(token)).onboarding_nonce;
    }
    return {
      ok: true,
      merchant_id: m.id,
      onboarding_status: m.onboarding_status,
      wallet_address: m.wallet_address,
      wallet_verified: m.wallet_verified_at !== null,
      nonce,
      terms_version: TERMS_VERSION,
      // The network this merchant's payments arrive on: the onboarding page asks the wallet to use it.
      chain_id: this.config.chains[m.test_mode ? 'test' : 'live']?.chainId.toString() ?? null,
      siwe: { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}` },
      merchant: this.merchants.respond(m),
    };
  }

  async proveWallet(token: string, dto: WalletProofDto): Promise<Record<string, unknown>> {
    const m = await this.open(token);
    let siwe: SiweMessage;
    try {
      siwe = new SiweMessage(dto.message);
    } catch {
      throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'not an EIP-4361 message' }] });
    }
    const expected = { domain: new URL(this.config.publicUrl).host, uri: `${this.onboardingBase}${token}` };
    if (siwe.domain !== expected.domain || siwe.uri !== expected.uri || !m.onboarding_nonce || siwe.nonce !== m.onboarding_nonce) {
      throw new AppError('invalid_signature', {
        errors: [{ field: 'message', message: 'domain, uri or nonce does not match this onboarding link' }],
      });
    }
    try {
      const result = await siwe.verify({ signature: dto.signature, domain: expected.domain, nonce: m.onboarding_nonce });
      if (!result.success) throw new Error('verification failed');
    } catch {
      throw new AppError('invalid_signature', { errors: [{ field: 'signature', message: 'signature does not match the message' }] });
    }
    const wallet = siwe.address.toLowerCase();
    if (m.wallet_address && m.wallet_address !== wallet) {
      throw new AppError('wallet_mismatch', { expected_wallet_address: m.wallet_address });
    }
    try {
      // The nonce is single use: the UPDATE only wins while it still holds the nonce that was signed.
      const rows = await this.db.query(
        `UPDATE merchants SET wallet_address = $2, wallet_verified_at = now(), onboarding_nonce = $4, updated_at = now()
          WHERE id = $1 AND onboarding_nonce = $3 AND onboarding_status = 'incomplete' RETURNING id`,
        [m.id, wallet, m.onboarding_nonce, newNonce()],
      );
      if (rows.length === 0) throw new AppError('invalid_signature', { errors: [{ field: 'message', message: 'nonce already used' }] });
      await this.merchants.changed(m.id);
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('wallet_address_conflict');
      throw e;
    }
    return this.state(token);
  }

  async complete(token: string, dto: CompleteOnboardingDto): Promise<Record<string, unknown>> {
    const m = await this.open(token);
    if (dto.accept_terms !== true) throw new AppError('terms_not_accepted');
    if (!m.wallet_address || !m.wallet_verified_at) throw new AppError('wallet_required');
    const currency = dto.display_currency ? this.merchants.supportedCurrency(dto.display_currency) : m.display_currency;
    const rows = await this.db.query(
      `UPDATE merchants SET onboarding_status = 'complete', terms_version = $2, terms_accepted_at = now(),
              display_name = COALESCE($3, display_name), business_name = COALESCE($4, business_name),
              country = COALESCE($5, country), display_currency = $6, onboarding_nonce = NULL, updated_at = now()
        WHERE id = $1 AND onboarding_status = 'incomplete' RETURNING id`,
      [m.id, TERMS_VERSION, dto.display_name ?? null, dto.business_name ?? null, dto.country ?? null, currency],
    );
    if (rows.length === 0) throw AppError.notFound();
    await this.merchants.changed(m.id);
    return { ok: true, onboarding_status: 'complete', merchant: this.merchants.respond(await this.merchants.mustLoad(this.db, m.id)) };
  }

  /** The merchant behind a live token; an unknown, malformed or spent token is a plain 404. */
  private async open(token: string): Promise<OnboardingRow> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) throw AppError.notFound();
    const [m] = await this.db.query<OnboardingRow>(
      `SELECT ${MERCHANT_COLUMNS}, m.onboarding_nonce, m.wallet_verified_at
         FROM merchants m JOIN partners p ON p.id = m.partner_id
        WHERE m.onboarding_token_hash = $1 AND m.onboarding_status = 'incomplete'`,
      [hashToken(token)],
    );
    if (!m) throw AppError.notFound();
    return m;
  }
}

/** SIWE nonces are alphanumeric, at least 8 characters. */
function newNonce(): string {
  return randomBytes(16).toString('hex');
}
