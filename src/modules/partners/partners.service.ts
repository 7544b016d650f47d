import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError } from '../../common/errors';
import { CHANGE_TOPICS, ChangeFeed } from '../../database/change-feed';
import { isUniqueViolation } from '../../database/pg-errors';
import { RatesService } from '../rates/rates.service';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import type { CreatePartnerDto, UpdatePartnerDto } from '../admin/admin.dto';
import type { Partner, PartnerSettings } from './partner';
import { PartnerRepository } from './partner.repository';

export const DEFAULT_ALLOWED_EXPIRY = [15, 30, 60, 120, 360, 1440, 4320, 10080];
export const DEFAULT_EXPIRY = 60;

/** Slugs never change (the update takes none), so a slug once read is kept; this bounds the map. */
const MAX_SLUGS = 10000;

/**
 * Partners: the owner of the partners table. Operators create and change them (DESIGN §4); other modules
 * read them here. A change of settings is announced on the change feed's `partners` topic, where modules
 * that keep partner facts in a cache (auth's key → principal) listen.
 */
@Injectable()
export class PartnersService {
  private readonly slugs = new Map<string, Promise<string>>();

  constructor(
    private readonly repo: PartnerRepository,
    private readonly rates: RatesService,
    private readonly feed: ChangeFeed,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  async create(dto: CreatePartnerDto, actor: Actor): Promise<Partner> {
    const currency = this.rates.supportedCurrency(dto.default_currency, 'default_currency');
    const allowed = dto.allowed_expiry_minutes ?? DEFAULT_ALLOWED_EXPIRY;
    const def = dto.default_expiry_minutes ?? (allowed.includes(DEFAULT_EXPIRY) ? DEFAULT_EXPIRY : allowed[0]);
    checkDefaultExpiry(allowed, def);
    const settings = { name: dto.name, defaultCurrency: currency, allowedExpiryMinutes: allowed, defaultExpiryMinutes: def };
    try {
      return await this.dataSource.transaction(async (em) => {
        const created = await this.repo.create(em, dto.slug, settings);
        await this.audit.record(em, actor, { partnerId: created.id, action: 'partner.created', targetId: created.id, details: { slug: dto.slug, ...auditSettings(settings) } });
        return created;
      });
    } catch (e) {
      if (isUniqueViolation(e)) throw new AppError('conflict', { errors: [{ field: 'slug', message: 'slug is taken' }] });
      throw e;
    }
  }

  /**
   * The partner, or the API's 404 (route ids are checked by UuidParamPipe). `em` inside a transaction: a read
   * on a second pool connection while the transaction holds one hangs the process once twenty such
   * transactions run at once (a plan's charge, 2026-11-27).
   */
  async get(id: string, em?: EntityManager): Promise<Partner> {
    const row = await this.repo.findById(id, em);
    if (!row) throw AppError.notFound();
    return row;
  }

  async update(id: string, dto: UpdatePartnerDto, actor: Actor): Promise<Partner> {
    const currency = dto.default_currency ? this.rates.supportedCurrency(dto.default_currency, 'default_currency') : undefined;
    // Caches of partner facts (auth's key → principal) evict on every instance when this commits.
    const updated = await this.feed.change(CHANGE_TOPICS.partners, async (em, announce) => {
      // The fields not sent are kept from the row as it stands under the lock: merged into a copy read before
      // it, two updates that raced wrote back each other's old values, and the trail credited the second with
      // undoing the first. Locked, the trail's "from" is what this replaced.
      const before = await this.repo.lockById(em, id);
      if (!before) return null;
      const allowed = dto.allowed_expiry_minutes ?? before.allowedExpiryMinutes;
      const def = dto.default_expiry_minutes ?? before.defaultExpiryMinutes;
      checkDefaultExpiry(allowed, def);
      const settings = { name: dto.name ?? before.name, defaultCurrency: currency ?? before.defaultCurrency, allowedExpiryMinutes: allowed, defaultExpiryMinutes: def };
      // A PATCH that changes nothing writes nothing: no update, no cache eviction, no audit row (the trail
      // lists changes, not calls).
      const changed = changes(auditSettings(before), auditSettings(settings));
      if (Object.keys(changed).length === 0) return before;
      const row = await this.repo.update(em, id, settings);
      await announce(id);
      await this.audit.record(em, actor, { partnerId: id, action: 'partner.updated', targetId: id, details: changed });
      return row;
    });
    if (!updated) throw AppError.notFound();
    return updated;
  }

  /** The partner's slug (a merchant's home_portal); kept in process, since a slug never changes. */
  slugOf(id: string): Promise<string> {
    const known = this.slugs.get(id);
    if (known) return known;
    // The pending read is shared, so a page of one partner's merchants reads the slug once.
    const slug = this.get(id).then((p) => p.slug);
    if (this.slugs.size >= MAX_SLUGS) this.slugs.clear();
    this.slugs.set(id, slug);
    slug.catch(() => this.slugs.delete(id));
    return slug;
  }
}

function auditSettings(s: PartnerSettings): Record<string, unknown> {
  return { name: s.name, default_currency: s.defaultCurrency, allowed_expiry_minutes: s.allowedExpiryMinutes, default_expiry_minutes: s.defaultExpiryMinutes };
}

/** The fields that differ, each as {from, to}. */
function changes(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const k of Object.keys(after)) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out[k] = { from: before[k], to: after[k] };
  }
  return out;
}

function checkDefaultExpiry(allowed: number[], def: number): void {
  if (!allowed.includes(def)) {
    throw AppError.invalid([{ field: 'default_expiry_minutes', message: 'must be one of allowed_expiry_minutes' }]);
  }
}
