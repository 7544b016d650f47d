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

  /** Stores every rate of one fetch in one statement; an existing currency gets the new rate and source. */
  async upsertAll(em: EntityManager, rates: Record<string, string>, source: string): Promise<void> {
    const rows = Object.entries(rates).map(([currency, rate]) => ({ currency, rate, source, updatedAt: () => 'now()' }));
    if (rows.length === 0) return;
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
