import { performance } from 'node:perf_hooks';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { normalizeCurrency } from '../../common/currencies';
import { CHANGE_TOPICS, ChangeFeed } from '../../database/change-feed';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { MetricsService } from '../ops/metrics.service';
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
/** A refused create logs the source's name at most this often per currency and instance. */
const REFUSAL_LOG_MS = 60000;

/** A stored rate as this instance holds it, with its age when it was read. */
interface HeldRate {
  row: RateRow;
  /** now() − updated_at, both on Postgres's clock, when the row was read… */
  ageAtLoadMs: number;
  /** …and when that was, on this process's monotonic clock. */
  loadedAt: number;
}

/**
 * Current fiat units per one token. Postgres holds them; every instance keeps a copy in memory for the
 * create path (read synchronously), reloaded when the change feed announces a refresh (Postgres NOTIFY) and every 10 s as a safety net.
 * A request snapshots the rate it used, so later refreshes never change it.
 */
@Injectable()
export class RatesService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Rates');
  private current = new Map<string, HeldRate>();
  /** The read of the stored rates under way, and the one queued to run after it (see reload). */
  private reading: Promise<void> | null = null;
  private readAgain: Promise<void> | null = null;
  private timer?: NodeJS.Timeout;
  /** When this instance last logged a refusal of each currency (monotonic clock). */
  private readonly refusalLogged = new Map<string, number>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(RATE_PROVIDER) private readonly provider: RateProvider,
    private readonly repo: RateRepository,
    private readonly feed: ChangeFeed,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  async onModuleInit(): Promise<void> {
    const rates = this;
    new Gauge({
      name: 'prs_rate_age_seconds',
      help: 'Seconds since each stored rate that ages (remote or injected source) was last fetched; past RATES_MAX_AGE_MS its currency prices no request',
      labelNames: ['currency', 'source'],
      registers: [this.metrics.registry],
      collect() {
        this.reset();
        for (const held of rates.current.values()) {
          if (rates.ages(held.row)) this.set({ currency: held.row.currency, source: held.row.source }, Math.round(rates.ageOf(held) / 1000));
        }
      },
    });
    new Gauge({
      name: 'prs_rate_source_age_seconds',
      help: "Seconds since the configured remote or injected rate source last answered (the age of its newest stored rate); absent for static RATES or before its first answer",
      labelNames: ['source'],
      registers: [this.metrics.registry],
      collect() {
        this.reset();
        const age = rates.sourceAgeMs();
        if (!(rates.provider instanceof StaticRateProvider) && age !== null) this.set({ source: rates.provider.name }, Math.round(age / 1000));
      },
    });
    // Static rates are the configuration itself: apply them at every start. A remote source is fetched at
    // start only when nothing is stored yet, or what is stored is too old to price; its repeating refresh job
    // keeps it current.
    await this.reload();
    if (this.provider instanceof StaticRateProvider || this.current.size === 0 || (this.sourceAgeMs() ?? Infinity) > this.config.ratesMaxAgeMs) {
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
    return this.current.get(currency)?.row.rate;
  }

  /**
   * Why `currency`'s stored rate may not price a new request now, or null when it may (or there is none: the
   * caller's unsupported_currency). A rate last fetched more than RATES_MAX_AGE_MS ago is refused with 502
   * rate_source_unavailable: the source has not quoted it for that long, and a request would keep the stale
   * rate for its whole life. Static rates never age (see `ages`). The answer goes to partners, merchants and
   * payers, so it names the currency, never the source (an internal host): that goes to the log, through
   * `refusing` once the caller really refuses (an idempotent replay of an earlier create is answered instead).
   */
  tooOld(currency: string): AppError | null {
    const held = this.current.get(currency);
    if (!held || !this.ages(held.row) || this.ageOf(held) <= this.config.ratesMaxAgeMs) return null;
    return new AppError('rate_source_unavailable', {
      fiat_currency: currency,
      message: `exchange rates for ${currency.toUpperCase()} are unavailable; try again later`,
    });
  }

  /** Logs (once a minute per currency) that a create is refused for `currency`'s stale rate, naming the source. */
  refusing(currency: string): void {
    const held = this.current.get(currency);
    const now = performance.now();
    const logged = this.refusalLogged.get(currency);
    if (!held || (logged !== undefined && now - logged < REFUSAL_LOG_MS)) return;
    this.refusalLogged.set(currency, now);
    this.logger.warn(
      `refusing creates in ${currency}: its rate from ${held.row.source} was fetched ${Math.round(this.ageOf(held) / 1000)} s ago, past RATES_MAX_AGE_MS (${this.config.ratesMaxAgeMs / 1000} s); configured source ${this.provider.name}`,
    );
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
    return [...this.current.values()].map((h) => h.row).sort((a, b) => a.currency.localeCompare(b.currency));
  }

  /**
   * Fetches from the provider and stores the answer (see RateRepository.store: a currency a remote answer
   * leaves out keeps its rate until it ages out); every instance reloads. `by` names who asked for a manual
   * refresh (admin API or portal), recorded in the audit trail with the stored rates; the schedule passes none.
   * A failure's `source` reaches the admin API only (the portal shows its own text).
   */
  async refresh(by?: { actor: Actor; partnerId: string }): Promise<RateRow[]> {
    let rates: Record<string, string>;
    try {
      rates = await this.provider.fetchRates();
    } catch (e) {
      this.logger.error(`rate source ${this.provider.name} failed: ${(e as Error).message}`);
      this.warnIfOld();
      throw new AppError('rate_source_unavailable', { source: this.provider.name });
    }
    const answeredAt = performance.now();
    const complete = this.provider instanceof StaticRateProvider;
    await this.dataSource.transaction(async (em) => {
      await this.repo.store(em, rates, this.provider.name, { answeredAt, complete });
      if (by) {
        await this.audit.record(em, by.actor, { partnerId: by.partnerId, action: 'rates.refreshed', targetId: null, details: { source: this.provider.name, rates } });
      }
    });
    await this.reload();
    if (!complete) this.warnLeftOut(rates);
    await this.feed.publish(CHANGE_TOPICS.rates, '1').catch((e: Error) => this.logger.warn(`could not announce the refresh; other instances reload within ${RELOAD_MS} ms: ${e.message}`));
    return this.list();
  }

  /**
   * Reads the stored rates and holds them. One read at a time: the timer, another instance's announcement and
   * this instance's refresh all ask, and overlapping reads could answer out of order, a read from before a
   * refresh put back after one from after it (a multi-instance hunt: creates priced at the superseded rate for
   * up to 10 s). Asked while a read is under way, which may predate what the caller knows, it reads once more
   * after that one, a read shared by every caller until it starts; each caller's promise settles once a read
   * begun after its call is held.
   */
  private reload(): Promise<void> {
    if (!this.reading) {
      this.reading = this.readStored().finally(() => {
        this.reading = null;
      });
      return this.reading;
    }
    this.readAgain ??= this.reading
      .catch(() => undefined)
      .then(() => {
        this.readAgain = null;
        return this.reload();
      });
    return this.readAgain;
  }

  private async readStored(): Promise<void> {
    const rows = await this.repo.allWithAge();
    const loadedAt = performance.now();
    this.current = new Map(
      rows.map((r) => [r.currency, { row: { currency: r.currency, rate: r.rate, source: r.source, updated_at: r.updatedAt }, ageAtLoadMs: r.ageMs, loadedAt }]),
    );
  }

  /**
   * A rate's age now: its age on Postgres's clock when read, plus the time since on this process's monotonic
   * clock. Neither this host's wall clock nor its skew against the database's enters, and a copy not reloaded
   * for a while (Postgres away) keeps ageing.
   */
  private ageOf(held: HeldRate): number {
    return held.ageAtLoadMs + (performance.now() - held.loadedAt);
  }

  /**
   * Static rates (stored by the static provider while it is the configured one) are the configuration itself
   * and never age. Anything else ages: a remote or injected source's rates, and static rows left from before
   * the configuration named a remote source (they are not what the operator configured any more).
   */
  private ages(row: RateRow): boolean {
    return !(this.provider instanceof StaticRateProvider && row.source === this.provider.name);
  }

  /**
   * Time since the configured source last answered: the age of its newest stored rate, null when none is
   * stored (never answered, or only rows of another source are left).
   */
  private sourceAgeMs(): number | null {
    let newest: number | null = null;
    for (const held of this.current.values()) {
      if (held.row.source === this.provider.name) newest = Math.min(newest ?? Infinity, this.ageOf(held));
    }
    return newest;
  }

  /**
   * After an answer that left some stored currencies out: name them while they still price (afterwards their
   * creates are refused and log it), so a source that dropped a currency is seen before it is switched off.
   */
  private warnLeftOut(answered: Record<string, string>): void {
    const max = this.config.ratesMaxAgeMs;
    const missing = [...this.current.values()].filter((h) => !(h.row.currency in answered) && this.ages(h.row) && this.ageOf(h) <= max);
    if (missing.length === 0) return;
    const which = missing.map((h) => `${h.row.currency} (fetched ${Math.round(this.ageOf(h) / 1000)} s ago)`).join(', ');
    this.logger.warn(`rate source ${this.provider.name} did not quote ${which}: kept at their last rate until RATES_MAX_AGE_MS (${max / 1000} s) from their fetch, then refused`);
  }

  /**
   * After a failed refresh: say how close the stored rates are to refusing requests, once the source's last
   * answer is half the max age old (a currency it dropped earlier does not count: warnLeftOut named it).
   */
  private warnIfOld(): void {
    const age = this.sourceAgeMs() ?? Infinity;
    const max = this.config.ratesMaxAgeMs;
    if (age === Infinity) {
      this.logger.error(`rate source ${this.provider.name} has no stored answer yet`);
    } else if (age > max) {
      this.logger.error(`rate source ${this.provider.name} last answered ${Math.round(age / 1000)} s ago, past RATES_MAX_AGE_MS (${max / 1000} s): new requests are refused (rate_source_unavailable) until a refresh succeeds`);
    } else if (age > max / 2) {
      this.logger.warn(`rate source ${this.provider.name} last answered ${Math.round(age / 1000)} s ago; new requests are refused once its rates pass RATES_MAX_AGE_MS (${max / 1000} s)`);
    }
  }
}
