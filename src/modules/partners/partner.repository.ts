import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import type { Partner, PartnerSettings } from './partner';
import { PartnerEntity } from './partner.entity';

/** The partners table (the webhook_* columns are the webhooks module's to read and write). */
@Injectable()
export class PartnerRepository {
  constructor(@InjectRepository(PartnerEntity) private readonly partners: Repository<PartnerEntity>) {}

  /** A unique violation (partners_slug_key) when the slug is taken. Partners are created rarely: save() is fine. */
  async create(em: EntityManager, slug: string, settings: PartnerSettings): Promise<Partner> {
    const partners = em.getRepository(PartnerEntity);
    return toPartner(await partners.save(partners.create({ slug, ...settings })));
  }

  /** On em's connection when given (inside a transaction: see PartnersService.get). */
  async findById(id: string, em?: EntityManager): Promise<Partner | null> {
    const row = await (em ? em.getRepository(PartnerEntity) : this.partners).findOneBy({ id });
    return row ? toPartner(row) : null;
  }

  /** The partner, its row locked for the caller's transaction; null when there is none. */
  async lockById(em: EntityManager, id: string): Promise<Partner | null> {
    const row = await em.getRepository(PartnerEntity).findOne({ where: { id }, lock: { mode: 'for_no_key_update' } });
    return row ? toPartner(row) : null;
  }

  /** The partner after the change; null when there is none. */
  async update(em: EntityManager, id: string, settings: PartnerSettings): Promise<Partner | null> {
    const partners = em.getRepository(PartnerEntity);
    const r = await partners.update({ id }, { ...settings, updatedAt: () => 'now()' });
    if (!r.affected) return null;
    const row = await partners.findOneBy({ id });
    return row ? toPartner(row) : null;
  }
}

function toPartner(e: PartnerEntity): Partner {
  return {
    id: e.id,
    slug: e.slug,
    name: e.name,
    defaultCurrency: e.defaultCurrency,
    allowedExpiryMinutes: e.allowedExpiryMinutes,
    defaultExpiryMinutes: e.defaultExpiryMinutes,
    createdAt: e.createdAt,
  };
}
