import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { RateEntity } from './rate.entity';

/** The rates table: the only reader and writer of it. */
@Injectable()
export class RateRepository {
  constructor(@InjectRepository(RateEntity) private readonly rates: Repository<RateEntity>) {}

  all(): Promise<RateEntity[]> {
    return this.rates.find();
  }

  /**
   * Makes one fetch the stored rates, in the caller's transaction: an existing currency gets the new rate and
   * source, and a currency the fetch no longer names loses its rate (its requests are refused as
   * unsupported_currency, never priced at a rate nobody quotes any more).
   */
  async replaceAll(em: EntityManager, rates: Record<string, string>, source: string): Promise<void> {
    const rows = Object.entries(rates).map(([currency, rate]) => ({ currency, rate, source, updatedAt: () => 'now()' }));
    if (rows.length === 0) return;
    await em.query(`DELETE FROM rates WHERE NOT (currency = ANY($1::text[]))`, [Object.keys(rates)]);
    await em
      .getRepository(RateEntity)
      .createQueryBuilder()
      .insert()
      .into(RateEntity)
      .values(rows)
      .orUpdate(['rate', 'source', 'updated_at'], ['currency'])
      .execute();
  }
}
