import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { normalizeCurrency } from '../../common/currencies';
import { CHANGE_TOPICS, ChangeFeed } from '../../database/change-feed';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { RATE_PROVIDER, type RateProvider } from './rate-provider';
import { RateRepository } from './rate.repository';
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
 * create path (read synchronously), reloaded when the change feed announces a refresh (Postgres NOTIFY) and every 10 s as a safety net.
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
    private readonly repo: RateRepository,
    private readonly feed: ChangeFeed,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
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
    const reload = () => void this.reload().catch(() => undefined);
    // A refresh on any instance, or notifications possibly missed: read the stored rates again.
    this.feed.subscribe(CHANGE_TOPICS.rates, reload);
    this.feed.onReset(reload);
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

  /**
   * A supported fiat currency in lower case, or a 400 naming the field. A code that is not ISO 4217, or one
   * without a configured rate, is an out-of-range field: invalid_request (DESIGN §3).
   */
  supportedCurrency(code: string, field = 'display_currency'): string {
    const c = normalizeCurrency(code);
    if (!c || !this.rate(c)) {
      throw AppError.invalid([{ field, message: `${field} must be one of: ${this.currencies().join(', ')}` }]);
    }
    return c;
  }

  list(): RateRow[] {
    return [...this.current.values()].sort((a, b) => a.currency.localeCompare(b.currency));
  }

  /**
   * Fetches from the provider and stores the result; every instance reloads. `by` names who asked for a manual
   * refresh (admin API or portal), recorded in the audit trail with the stored rates; the schedule passes none.
   */
  async refresh(by?: { actor: Actor; partnerId: string }): Promise<RateRow[]> {
    let rates: Record<string, string>;
    try {
      rates = await this.provider.fetchRates();
    } catch (e) {
      this.logger.error(`rate source ${this.provider.name} failed: ${(e as Error).message}`);
      throw new AppError('rate_source_unavailable', { source: this.provider.name });
    }
    await this.dataSource.transaction(async (em) => {
      await this.repo.replaceAll(em, rates, this.provider.name);
      if (by) {
        await this.audit.record(em, by.actor, { partnerId: by.partnerId, action: 'rates.refreshed', targetId: null, details: { source: this.provider.name, rates } });
      }
    });
    await this.reload();
    await this.feed.publish(CHANGE_TOPICS.rates, '1').catch((e: Error) => this.logger.warn(`could not announce the refresh; other instances reload within ${RELOAD_MS} ms: ${e.message}`));
    return this.list();
  }

  private async reload(): Promise<void> {
    const rows = await this.repo.all();
    this.current = new Map(rows.map((r) => [r.currency, { currency: r.currency, rate: r.rate, source: r.source, updated_at: r.updatedAt }]));
  }
}
