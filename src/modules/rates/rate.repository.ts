import { performance } from 'node:perf_hooks';
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
   * Stores one answer of a rate source, in the caller's transaction. Each currency it names gets the new rate,
   * the source and, as `updated_at`, the time the answer arrived (`answeredAt`, this process's
   * `performance.now()` then, turned into Postgres's clock by the time elapsed since); a currency it leaves out keeps its rate and its older fetch time, so it ages out at
   * RATES_MAX_AGE_MS rather than at once (a partial answer is often the source's hiccup). `complete` answers
   * (the static RATES: the configuration itself) also remove the currencies they leave out.
   *
   * Race-safe without ordering the callers: a row is only ever replaced by an answer that arrived later than
   * the one it holds (`WHERE rates.updated_at <= EXCLUDED.updated_at`, which ON CONFLICT re-checks against the
   * newest committed row), so two overlapping refreshes never regress a newer rate to an older one, whichever
   * commits first.
   */
  async store(em: EntityManager, rates: Record<string, string>, source: string, opts: { answeredAt: number; complete: boolean }): Promise<void> {
    const currencies = Object.keys(rates);
    if (currencies.length === 0) return;
    // Before the lock, so time spent waiting for it does not make this answer look newer than it is.
    const [{ at }]: Array<{ at: Date }> = await em.query(
      `SELECT clock_timestamp() - make_interval(secs => $1::float8 / 1000) AS at`,
      [Math.max(0, performance.now() - opts.answeredAt)],
    );
    // One refresh at a time: a complete answer's DELETE would not see rows an overlapping refresh inserted.
    // The key of the lock's first version (replaceAll), so instances of both versions exclude each other while
    // a deploy rolls.
    await em.query(`SELECT pg_advisory_xact_lock(hashtext('rates.replaceAll'))`);
    if (opts.complete) {
      await em.query(`DELETE FROM rates WHERE NOT (currency = ANY($1::text[])) AND updated_at <= $2`, [currencies, at]);
    }
    await em.query(
      `INSERT INTO rates (currency, rate, source, updated_at)
       SELECT currency, rate::numeric, $3, $4 FROM unnest($1::text[], $2::text[]) AS a(currency, rate)
       ON CONFLICT (currency) DO UPDATE SET rate = EXCLUDED.rate, source = EXCLUDED.source, updated_at = EXCLUDED.updated_at
       WHERE rates.updated_at <= EXCLUDED.updated_at`,
      [currencies, currencies.map((c) => rates[c]), source, at],
    );
  }
}
