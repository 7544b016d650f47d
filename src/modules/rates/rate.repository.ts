import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { RateEntity } from './rate.entity';

/** The rates table: the only reader and writer of it. */
@Injectable()
export class RateRepository {
  constructor(@InjectRepository(RateEntity) private readonly rates: Repository<RateEntity>) {}

  /**
   * Every stored rate with its age measured on Postgres's clock alone (`now() - updated_at`, both written by
   * Postgres), so an instance whose clock disagrees with the database's still reads the right age.
   */
  async allWithAge(): Promise<Array<{ currency: string; rate: string; source: string; updatedAt: Date; ageMs: number }>> {
    const rows: Array<{ currency: string; rate: string; source: string; updated_at: Date; age_ms: number }> = await this.rates.query(
      `SELECT currency, rate, source, updated_at, (extract(epoch FROM now() - updated_at) * 1000)::float8 AS age_ms FROM rates`,
    );
    return rows.map((r) => ({ currency: r.currency, rate: r.rate, source: r.source, updatedAt: r.updated_at, ageMs: r.age_ms }));
  }

  /**
   * Makes one fetch the stored rates, in the caller's transaction: an existing currency gets the new rate and
   * source, and a currency the fetch no longer names loses its rate (its requests are refused as
   * unsupported_currency, never priced at a rate nobody quotes any more).
   */
  async replaceAll(em: EntityManager, rates: Record<string, string>, source: string): Promise<void> {
    const rows = Object.entries(rates).map(([currency, rate]) => ({ currency, rate, source, updatedAt: () => 'now()' }));
    if (rows.length === 0) return;
    // One refresh at a time (a scheduled one and a partner's on another instance): without it, this DELETE
    // would not see rows an overlapping refresh inserted, and the stored set would mix both answers.
    await em.query(`SELECT pg_advisory_xact_lock(hashtext('rates.replaceAll'))`);
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
