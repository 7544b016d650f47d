import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ATTEMPT_OUTCOMES, type AttemptOutcome } from '../webhooks/delivery-policy';

/** Label of requests that matched no route (404s of unknown paths), so raw URLs never become labels. */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * Express sets req.route to the last route that matched. nestjs-pino's module middleware is mounted
 * as a catch-all route with this pattern, so a request that matched no controller route still has it.
 */
export const CATCH_ALL_ROUTE = '{/*splat}';

/** The matched route pattern of a request, or UNMATCHED_ROUTE. */
export function matchedRoute(req: { route?: { path?: unknown } }): string {
  const path = req.route?.path;
  return typeof path === 'string' && path !== CATCH_ALL_ROUTE ? path : UNMATCHED_ROUTE;
}

/** Bounds every scrape-time read (Redis, Postgres): a scrape answers within about a second, whatever is down. */
export const SCRAPE_TIMEOUT_MS = 1000;

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The process's Prometheus registry (one per application instance, so several services in one test process
 * do not collide) and the metrics other modules feed:
 *  - `prs_http_request_duration_seconds{method,route,status_code}`: fed by httpMetrics (mounted by bootstrap);
 *    `route` is the matched route pattern (`/api/v1/requests/:id`), never the raw URL.
 *  - `prs_verification_duration_seconds{outcome}`: `observeVerification()`; the worker role feeds it from the
 *    verification queue's completed jobs (VerificationTimer), other code may call it too.
 *  - `prs_verified_reorged_total{mode}`: `countVerifiedReorged()`, fed by the worker's finality job.
 *  - `prs_claims_unmovable_total{mode}`: `countClaimUnmovable()`, fed by the worker's finality job.
 *  - `prs_notifications_unbuildable_total{kind,channel}`: `countUnbuildableNotification()`, fed by the
 *    worker's notification sender.
 *  - `prs_webhook_attempts_total{outcome}`: `countWebhookAttempt()`, fed by the worker's webhook delivery.
 *  - `prs_webhook_secret_unavailable_total`: `countWebhookSecretUnavailable()`, fed by the worker's webhook
 *    delivery: tries that sent nothing because a stored secret does not open here (alert on any increase).
 *  - `prs_notification_attempts_total{channel,outcome}`: `countNotificationAttempt()`, fed by the worker's
 *    notification sender (sent, retry, failed, in_doubt, abandoned).
 * Scrape-time gauges (queue depths, the webhook backlog) register themselves through `gauge()`.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;

  private readonly httpDuration = new Histogram({
    name: 'prs_http_request_duration_seconds',
    help: 'HTTP request latency by matched route pattern, method and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  private readonly verificationDuration = new Histogram({
    name: 'prs_verification_duration_seconds',
    help: 'Time from a transaction hash being queued for verification to the verification outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 21600],
    registers: [this.registry],
  });

  private readonly verifiedReorged = new Counter({
    name: 'prs_verified_reorged_total',
    help: 'Verified claims whose transfer log vanished from the canonical chain after verification (a reorg); each is an alert',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  private readonly claimsUnmovable = new Counter({
    name: 'prs_claims_unmovable_total',
    help: 'Verified claims whose transaction was re-included at log indexes another claim holds, so finality cannot follow them; each is an alert',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  private readonly unbuildableNotifications = new Counter({
    name: 'prs_notifications_unbuildable_total',
    help: 'Notifications abandoned, never sent, because their message could not be built from the stored facts',
    labelNames: ['kind', 'channel'] as const,
    registers: [this.registry],
  });

  private readonly webhookAttempts = new Counter({
    name: 'prs_webhook_attempts_total',
    help: 'Webhook delivery attempts recorded by this process, by outcome (delivered, retry, abandoned)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly webhookSecretUnavailable = new Counter({
    name: 'prs_webhook_secret_unavailable_total',
    help: 'Webhook delivery tries that sent nothing because a stored secret does not open with this process\'s keys',
    registers: [this.registry],
  });

  private readonly notificationAttempts = new Counter({
    name: 'prs_notification_attempts_total',
    help: 'Email and SMS send attempts recorded by this process, by channel and outcome (sent, retry, failed, in_doubt, abandoned)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });

  /** Each scrape-time gauge's read of the scrape under way (or the last one), by gauge name. */
  private readonly scrapeReads = new Map<string, Promise<void>>();

  private readonly sourceUp = new Gauge({
    name: 'prs_scrape_source_up',
    help: '1 when this scrape could read the source (queues: Redis, deliveries: Postgres, chain: any configured chain RPC), else 0',
    labelNames: ['source'] as const,
    registers: [this.registry],
    // Rendered after this scrape's reads: the registry collects every metric at once, and this one, registered
    // first, used to show the previous scrape's outcome (1 on the first scrape of an outage, 0 on the first after).
    collect: async () => {
      await new Promise((resolve) => setImmediate(resolve));
      await Promise.all(this.scrapeReads.values());
    },
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Every outcome's series from the start, so rate() and increase() see the first attempt of each.
    for (const outcome of ATTEMPT_OUTCOMES) this.webhookAttempts.inc({ outcome }, 0);
  }

  // Label sets are few (routes × methods × statuses); a cached child skips prom-client's per-call label hashing.
  private readonly httpSeries = new Map<string, { observe(v: number): void }>();

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      series = this.httpDuration.labels({ method, route, status_code: String(status) });
      this.httpSeries.set(key, series);
    }
    series.observe(seconds);
  }

  /**
   * Records one verification: `seconds` from the hash being queued (proof submitted, or found by the chain
   * scan) to its outcome (`verified`, `rejected`, `moot`, `failed`, …).
   */
  observeVerification(seconds: number, outcome: string): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.verificationDuration.observe({ outcome }, seconds);
  }

  /** One verified claim found reorged away by this process (the alert row is the durable record). */
  countVerifiedReorged(mode: 'test' | 'live'): void {
    this.verifiedReorged.inc({ mode });
  }

  /** One verified claim found unable to follow its re-included transaction, first seen by this process. */
  countClaimUnmovable(mode: 'test' | 'live'): void {
    this.claimsUnmovable.inc({ mode });
  }

  /** One webhook delivery attempt recorded by this process, with its outcome. */
  countWebhookAttempt(outcome: AttemptOutcome): void {
    this.webhookAttempts.inc({ outcome });
  }

  /** One delivery try that sent nothing: a stored secret did not open here (the delivery waits, unspent). */
  countWebhookSecretUnavailable(): void {
    this.webhookSecretUnavailable.inc();
  }

  /** One email or SMS attempt recorded by this process; `in_doubt` ones are never resent, so alert on them. */
  countNotificationAttempt(channel: string, outcome: string): void {
    this.notificationAttempts.inc({ channel, outcome });
  }

  /** One notification abandoned by this process because its message could not be built (last_error says why). */
  countUnbuildableNotification(kind: string, channel: string): void {
    this.unbuildableNotifications.inc({ kind, channel });
  }

  /**
   * A gauge whose values are read at scrape time by `read`, bounded by SCRAPE_TIMEOUT_MS. When the read fails
   * the gauge is emptied (stale depths would mislead) and `prs_scrape_source_up{source}` of the same scrape is 0.
   */
  gauge<L extends string>(
    opts: { name: string; help: string; labelNames: readonly L[]; source: string },
    read: () => Promise<Array<{ labels: Record<L, string>; value: number }>>,
    onError?: (e: Error) => void,
  ): Gauge<L> {
    const sourceUp = this.sourceUp;
    const reads = this.scrapeReads;
    return new Gauge<L>({
      name: opts.name,
      help: opts.help,
      labelNames: opts.labelNames,
      registers: [this.registry],
      async collect() {
        const done = (async () => {
          try {
            const values = await withTimeout(read(), SCRAPE_TIMEOUT_MS, opts.source);
            this.reset();
            for (const v of values) this.set(v.labels as never, v.value);
            sourceUp.set({ source: opts.source }, 1);
          } catch (e) {
            this.reset();
            sourceUp.set({ source: opts.source }, 0);
            onError?.(e as Error);
          }
        })();
        reads.set(opts.name, done);
        await done;
      },
    });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
