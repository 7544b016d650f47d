import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { Db } from '../../database/db';
import { RedisConnections } from '../../common/redis/redis.module';
import { RATE_PROVIDER, type RateProvider } from './rate-provider';
import { StaticRateProvider } from './static-rate.provider';

export interface RateRow {
  currency: string;
  rate: string;
  source: string;
  updated_at: Date;
}

const RELOAD_MS = 10000;

/**
 * Current fiat units per one token. Postgres holds them; every instance keeps a copy in memory for the
 * create path (read synchronously), reloaded on a `rates-updated` message and every 10 s as a safety net.
 * A request snapshots the rate it used, so later refreshes never change it.
 */
@Injectable()
export class RatesService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Rates');
  private current = new Map<string, RateRow>();
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(RATE_PROVIDER) private readonly provider: RateProvider,
    private readonly db: Db,
    private readonly redis: RedisConnections,
  ) {}

  async onModuleInit(): Promise<void> {
    // Static rates are the configuration itself: apply them at every start. A remote source is fetched at
    // start only when nothing is stored yet; its repeating refresh job keeps it current.
    await this.reload();
    if (this.provider instanceof StaticRateProvider || this.current.size === 0) {
      await this.refresh().catch((e: Error) => this.logger.error(`initial rate refresh failed: ${e.message}`));
    }
    this.timer = setInterval(() => void this.reload().catch(() => undefined), RELOAD_MS);
    this.timer.unref();
    await this.redis.subscribe('rates-updated', () => void this.reload().catch(() => undefined)).catch(() => undefined);
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  rate(currency: string): string | undefined {
    return this.current.get(currency)?.rate;
  }

  currencies(): string[] {
    return [...this.current.keys()].sort();
  }

  list(): RateRow[] {
    return [...this.current.values()].sort((a, b) => a.currency.localeCompare(b.currency));
  }

  /** Fetches from the provider and stores the result; every instance reloads. */
  async refresh(): Promise<RateRow[]> {
    let rates: Record<string, string>;
    try {
      rates = await this.provider.fetchRates();
    } catch (e) {
      this.logger.error(`rate source ${this.provider.name} failed: ${(e as Error).message}`);
      throw new AppError('rate_source_unavailable', { source: this.provider.name });
    }
    const codes = Object.keys(rates);
    await this.db.query(
      `INSERT INTO rates (currency, rate, source, updated_at)
       SELECT c, r::numeric, $3, now() FROM unnest($1::text[], $2::text[]) AS t(c, r)
       ON CONFLICT (currency) DO UPDATE SET rate = EXCLUDED.rate, source = EXCLUDED.source, updated_at = now()`,
      [codes, codes.map((c) => rates[c]), this.provider.name],
    );
    await this.reload();
    await this.redis.publish('rates-updated', '1').catch(() => undefined);
    return this.list();
  }

  private async reload(): Promise<void> {
    const rows = await this.db.query<RateRow>(`SELECT currency, rate::text AS rate, source, updated_at FROM rates`);
    this.current = new Map(rows.map((r) => [r.currency, r]));
  }
}
