import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThan, Not, IsNull, type EntityManager, type Repository } from 'typeorm';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';

/** The two secret columns as stored (sealed values, see WebhookSecrets). */
export interface StoredSecrets {
  secret: string | null;
  previousSecret: string | null;
}

/**
 * webhook_endpoints: a partner's URL, switch and secrets. A partner without a row has webhooks off; so has
 * a row without a URL. Writes take the caller's transaction (the settings use cases lock the row first).
 */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(@InjectRepository(WebhookEndpointEntity) private readonly endpoints: Repository<WebhookEndpointEntity>) {}

  find(partnerId: string): Promise<WebhookEndpointEntity | null> {
    return this.endpoints.findOneBy({ partnerId });
  }

  /**
   * Creates the partner's row unless it exists, with `secret` if given. Rejects with Postgres' foreign-key
   * violation when the partner does not exist. Of two racing creations the second waits for the first to
   * commit and then does nothing.
   */
  async createIfAbsent(em: EntityManager, partnerId: string, secret: string | null): Promise<void> {
    await em
      .createQueryBuilder()
      .insert()
      .into(WebhookEndpointEntity)
      .values({ partnerId, secret })
      .orIgnore()
      .updateEntity(false)
      .execute();
  }

  /** The row, locked until the transaction ends: settings changes of one partner apply one after the other. */
  async lock(em: EntityManager, partnerId: string): Promise<WebhookEndpointEntity | null> {
    return em.getRepository(WebhookEndpointEntity).findOne({ where: { partnerId }, lock: { mode: 'pessimistic_write' } });
  }

  async update(
    em: EntityManager,
    partnerId: string,
    patch: Partial<Pick<WebhookEndpointEntity, 'url' | 'enabled' | 'enabledAt' | 'secret' | 'previousSecret'>>,
  ): Promise<void> {
    await em.getRepository(WebhookEndpointEntity).update({ partnerId }, { ...patch, updatedAt: () => 'now()' });
  }

  /**
   * Replaces both stored secrets, only if they are still `from` (a settings change in between wins).
   * Returns whether the row was changed.
   */
  async replaceSecrets(partnerId: string, from: StoredSecrets, to: StoredSecrets): Promise<boolean> {
    const result = await this.endpoints
      .createQueryBuilder()
      .update()
      .set({ secret: to.secret, previousSecret: to.previousSecret, updatedAt: () => 'now()' })
      .where('partner_id = :partnerId', { partnerId })
      .andWhere('secret IS NOT DISTINCT FROM :secret', { secret: from.secret })
      .andWhere('previous_secret IS NOT DISTINCT FROM :previousSecret', { previousSecret: from.previousSecret })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Rows holding a secret, in partner id order after `afterPartnerId` ('' for the first page). */
  withSecrets(afterPartnerId: string, limit: number): Promise<Array<StoredSecrets & { partnerId: string }>> {
    return this.endpoints.find({
      select: { partnerId: true, secret: true, previousSecret: true },
      where: { secret: Not(IsNull()), ...(afterPartnerId ? { partnerId: MoreThan(afterPartnerId) } : {}) },
      order: { partnerId: 'ASC' },
      take: limit,
    });
  }
}
