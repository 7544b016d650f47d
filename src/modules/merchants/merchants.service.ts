import { randomBytes, randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { normalizeCurrency } from '../../common/currencies';
import { AppError } from '../../common/errors';
import { PAGE_DEFAULT } from '../../common/paging';
import { Db, type Queryable } from '../../database/db';
import { RatesService } from '../rates/rates.service';
import { MerchantDirectory } from './merchant-directory';
import type { Principal } from '../auth/api-key';
import type { CreateMerchantDto, ListMerchantsQuery } from './merchant.dto';
import { hashToken, MERCHANT_COLUMNS, onboardingToken, type MerchantRow } from './merchant';
import { toMerchantResponse } from './merchant.mapper';

@Injectable()
export class MerchantsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly rates: RatesService,
    private readonly directory: MerchantDirectory,
  ) {}

  /**
   * A supported display currency in lower case, or a 400 naming the field. A code that is not ISO 4217, or one
   * without a configured rate, is an out-of-range field: invalid_request (DESIGN §3).
   */
  supportedCurrency(code: string, field = 'display_currency'): string {
    const c = normalizeCurrency(code);
    if (!c || !this.rates.rate(c)) {
      throw AppError.invalid([{ field, message: `${field} must be one of: ${this.rates.currencies().join(', ')}` }]);
    }
    return c;
  }

  /** Spec §4.5: idempotent on wallet_address within a partner and mode; wallets are globally unique. */
  async create(p: Principal, dto: CreateMerchantDto): Promise<{ body: Record<string, unknown>; created: boolean }> {
    const currency = this.supportedCurrency(dto.display_currency ?? p.defaultCurrency);
    const id = randomUUID();
    const salt = randomBytes(32);
    const tokenHash = hashToken(onboardingToken(this.config.onboardingTokenSecret, id, salt));
    const inserted = await this.db.query<{ id: string }>(
      `INSERT INTO merchants (id, partner_id, test_mode, email, display_name, business_name, country, phone, website,
         instagram, industry, account_type, display_currency, wallet_address, onboarding_token_salt, onboarding_token_hash)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)
       ON CONFLICT (wallet_address) DO NOTHING RETURNING id`,
      [id, p.partnerId, p.mode === 'test', dto.email ?? null, dto.display_name ?? null, dto.business_name ?? null,
        dto.country ?? null, dto.phone ?? null, dto.website ?? null, dto.instagram ?? null, dto.industry ?? null,
        dto.account_type ?? 'consumer', currency, dto.wallet_address ?? null, salt, tokenHash],
    );
    if (inserted.length === 1) {
      return { body: this.respond(await this.mustLoad(this.db, id)), created: true };
    }
    // The wallet is taken: a replay when it is this partner's merchant in this mode, a conflict otherwise.
    const [owner] = await this.db.query<MerchantRow>(
      `SELECT ${MERCHANT_COLUMNS} FROM merchants m JOIN partners p ON p.id = m.partner_id WHERE m.wallet_address = $1`,
      [dto.wallet_address],
    );
    if (owner && owner.partner_id === p.partnerId && owner.test_mode === (p.mode === 'test')) {
      return { body: this.respond(owner, true), created: false };
    }
    throw new AppError('wallet_address_conflict');
  }

  /** One merchant of this partner in this key's mode; anything else is an indistinguishable 404. */
  async get(p: Principal, id: string): Promise<Record<string, unknown>> {
    const m = await this.findOwned(p.partnerId, p.mode, id);
    if (!m) throw AppError.notFound();
    return this.respond(m);
  }

  async findOwned(partnerId: string, mode: Mode, id: string): Promise<MerchantRow | null> {
    const [m] = await this.db.query<MerchantRow>(
      `SELECT ${MERCHANT_COLUMNS} FROM merchants m JOIN partners p ON p.id = m.partner_id
        WHERE m.id = $1 AND m.partner_id = $2 AND m.test_mode = $3`,
      [id, partnerId, mode === 'test'],
      'merchant_owned',
    );
    return m ?? null;
  }

  async list(p: Pick<Principal, 'partnerId' | 'mode'>, q: ListMerchantsQuery): Promise<Record<string, unknown>> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const params: unknown[] = [p.partnerId, p.mode === 'test'];
    let where = 'm.partner_id = $1 AND m.test_mode = $2';
    if (q.onboarding_status) {
      params.push(q.onboarding_status);
      where += ` AND m.onboarding_status = $${params.length}`;
    }
    if (q.disabled !== undefined) {
      params.push(q.disabled);
      where += ` AND m.disabled = $${params.length}`;
    }
    params.push(limit + 1, offset);
    const rows = await this.db.query<MerchantRow>(
      `SELECT ${MERCHANT_COLUMNS} FROM merchants m JOIN partners p ON p.id = m.partner_id
        WHERE ${where} ORDER BY m.created_at, m.id LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return {
      ok: true,
      merchants: rows.slice(0, limit).map((m) => this.respond(m)),
      has_more: rows.length > limit,
      limit,
      offset,
    };
  }

  /** Tells every instance that what create reads of this merchant has changed. */
  changed(id: string): Promise<void> {
    return this.directory.changed(id);
  }

  /** Admin: disable or enable any merchant. */
  async setDisabled(id: string, disabled: boolean): Promise<Record<string, unknown>> {
    const rows = await this.db.query<{ id: string }>(
      `UPDATE merchants SET disabled = $2, updated_at = now() WHERE id = $1 RETURNING id`,
      [id, disabled],
    );
    if (rows.length === 0) throw AppError.notFound();
    await this.directory.changed(id);
    return this.respond(await this.mustLoad(this.db, id));
  }

  async mustLoad(q: Queryable, id: string): Promise<MerchantRow> {
    const [m] = await q.query<MerchantRow>(
      `SELECT ${MERCHANT_COLUMNS} FROM merchants m JOIN partners p ON p.id = m.partner_id WHERE m.id = $1`,
      [id],
    );
    if (!m) throw AppError.notFound();
    return m;
  }

  respond(m: MerchantRow, replay = false): Record<string, unknown> {
    return toMerchantResponse(m, this.config.publicUrl, this.config.onboardingTokenSecret, replay);
  }
}
