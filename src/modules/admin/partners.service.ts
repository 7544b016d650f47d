import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { iso } from '../../common/time';
import { Db, isUniqueViolation } from '../../database/db';
import { generateApiKey } from '../auth/api-key';
import { ApiKeyService } from '../auth/api-key.service';
import { SCOPES } from '../auth/scopes';
import { MerchantsService } from '../merchants/merchants.service';
import type { CreateKeyDto, CreatePartnerDto, UpdatePartnerDto } from './admin.dto';

export const DEFAULT_ALLOWED_EXPIRY = [15, 30, 60, 120, 360, 1440, 4320, 10080];
export const DEFAULT_EXPIRY = 60;

interface PartnerRow {
  id: string;
  slug: string;
  name: string;
  default_currency: string;
  allowed_expiry_minutes: number[];
  default_expiry_minutes: number;
  webhook_url: string | null;
  webhook_enabled: boolean;
  created_at: Date;
}

/** Partners and their API keys: operator CRUD (DESIGN §4). */
@Injectable()
export class PartnersService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly keys: ApiKeyService,
    private readonly merchants: MerchantsService,
  ) {}

  async create(dto: CreatePartnerDto): Promise<Record<string, unknown>> {
    const currency = this.merchants.supportedCurrency(dto.default_currency, 'default_currency');
    const allowed = dto.allowed_expiry_minutes ?? DEFAULT_ALLOWED_EXPIRY;
    const def = dto.default_expiry_minutes ?? (allowed.includes(DEFAULT_EXPIRY) ? DEFAULT_EXPIRY : allowed[0]);
    checkDefaultExpiry(allowed, def);
    try {
      const [row] = await this.db.query<PartnerRow>(
        `INSERT INTO partners (slug, name, default_currency, allowed_expiry_minutes, default_expiry_minutes)
         VALUES ($1,$2,$3,$4,$5) RETURNING *`,
        [dto.slug, dto.name, currency, allowed, def],
      );
      return toPartner(row);
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('conflict', { errors: [{ field: 'slug', message: 'slug is taken' }] });
      throw e;
    }
  }

  async get(id: string): Promise<Record<string, unknown>> {
    return toPartner(await this.load(id));
  }

  async update(id: string, dto: UpdatePartnerDto): Promise<Record<string, unknown>> {
    const current = await this.load(id);
    const allowed = dto.allowed_expiry_minutes ?? current.allowed_expiry_minutes;
    const def = dto.default_expiry_minutes ?? current.default_expiry_minutes;
    checkDefaultExpiry(allowed, def);
    const currency = dto.default_currency
      ? this.merchants.supportedCurrency(dto.default_currency, 'default_currency')
      : current.default_currency;
    const [row] = await this.db.query<PartnerRow>(
      `UPDATE partners SET name = $2, default_currency = $3, allowed_expiry_minutes = $4, default_expiry_minutes = $5,
              updated_at = now() WHERE id = $1 RETURNING *`,
      [id, dto.name ?? current.name, currency, allowed, def],
    );
    await this.keys.invalidate(`partner:${id}`);
    return toPartner(row);
  }

  async createKey(partnerId: string, dto: CreateKeyDto): Promise<Record<string, unknown>> {
    await this.load(partnerId);
    const key = generateApiKey(this.config.keyPrefix, dto.mode);
    const scopes = dto.scopes ?? [...SCOPES];
    const [row] = await this.db.query<{ id: string; created_at: Date }>(
      `INSERT INTO api_keys (partner_id, mode, scopes, key_hash, display_prefix, label)
       VALUES ($1,$2,$3,$4,$5,$6) RETURNING id, created_at`,
      [partnerId, dto.mode, scopes, key.hash, key.displayPrefix, dto.label ?? null],
    );
    return {
      ok: true, key_id: row.id, api_key: key.raw, mode: dto.mode, scopes, label: dto.label ?? null,
      display_prefix: key.displayPrefix, created_at: iso(row.created_at),
    };
  }

  async listKeys(partnerId: string): Promise<Record<string, unknown>> {
    await this.load(partnerId);
    const rows = await this.db.query<{ id: string; mode: string; scopes: string[]; display_prefix: string; label: string | null; created_at: Date; revoked_at: Date | null }>(
      `SELECT id, mode, scopes, display_prefix, label, created_at, revoked_at FROM api_keys WHERE partner_id = $1 ORDER BY created_at, id`,
      [partnerId],
    );
    return {
      ok: true,
      keys: rows.map((k) => ({
        key_id: k.id, mode: k.mode, scopes: k.scopes, display_prefix: k.display_prefix, label: k.label,
        created_at: iso(k.created_at), revoked_at: iso(k.revoked_at),
      })),
    };
  }

  /** Revoked at once on every instance: the row is marked and the cached record evicted everywhere. */
  async revokeKey(partnerId: string, keyId: string): Promise<Record<string, unknown>> {
    const [row] = await this.db.query<{ key_hash: Buffer; revoked_at: Date }>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND partner_id = $2 RETURNING key_hash, revoked_at`,
      [keyId, partnerId],
    );
    if (!row) throw AppError.notFound();
    await this.keys.invalidate(row.key_hash.toString('hex'));
    return { ok: true, key_id: keyId, revoked_at: iso(row.revoked_at) };
  }

  private async load(id: string): Promise<PartnerRow> {
    const [row] = await this.db.query<PartnerRow>(`SELECT * FROM partners WHERE id = $1`, [id]);
    if (!row) throw AppError.notFound();
    return row;
  }
}

function checkDefaultExpiry(allowed: number[], def: number): void {
  if (!allowed.includes(def)) {
    throw AppError.invalid([{ field: 'default_expiry_minutes', message: 'must be one of allowed_expiry_minutes' }]);
  }
}

function toPartner(p: PartnerRow): Record<string, unknown> {
  return {
    ok: true,
    partner_id: p.id,
    slug: p.slug,
    name: p.name,
    default_currency: p.default_currency,
    allowed_expiry_minutes: p.allowed_expiry_minutes,
    default_expiry_minutes: p.default_expiry_minutes,
    webhook_url: p.webhook_url,
    webhook_enabled: p.webhook_enabled,
    created_at: iso(p.created_at),
  };
}
