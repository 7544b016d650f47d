import { Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator, type HealthCheckResult, type HealthIndicatorFunction } from '@nestjs/terminus';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../config/config';
import { RedisConnections } from '../../common/redis/redis.module';
import { AssetRegistry } from '../chain/asset-registry';
import { urlsToOrigins } from '../../common/url-origins';

/** Each dependency gets this long to answer; /health/ready answers within about this bound. */
export const CHECK_TIMEOUT_MS = 1000;
/** Results are reused this long: health is served on the public listener and must stay cheap under load. */
export const CHECK_CACHE_MS = 1000;

/** Error text for a public endpoint: URLs reduced to their origin (RPC URLs often carry an API key). */
export function publicMessage(e: unknown): string {
  return urlsToOrigins(e instanceof Error ? e.message : String(e)).slice(0, 300);
}

/** A readiness body for the public listener: each check keeps its status, a failing one loses its `message`. */
export function withoutReasons<T extends HealthCheckResult & { ok: boolean }>(body: T): T {
  const strip = <P extends Record<string, unknown> | undefined>(part: P): P =>
    (part && Object.fromEntries(Object.entries(part).map(([key, check]) => {
      const { message: _reason, ...rest } = (check ?? {}) as Record<string, unknown>;
      return [key, rest];
    }))) as P;
  return { ...body, info: strip(body.info), error: strip(body.error), details: strip(body.details) };
}

export interface Readiness {
  up: boolean;
  body: HealthCheckResult & { ok: boolean };
}

/**
 * /health/ready: Postgres answers `SELECT 1`, Redis answers PING, and every configured mode's RPC answers
 * with the configured chain id (through AssetRegistry, which also retries a mode that was unreachable at
 * start). Each check is bounded by CHECK_TIMEOUT_MS, cached CHECK_CACHE_MS, and never runs twice at once.
 */
@Injectable()
export class ReadinessService {
  private readonly inFlight = new Map<string, Promise<Record<string, unknown> | void>>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly typeorm: TypeOrmHealthIndicator,
    private readonly redis: RedisConnections,
    private readonly assets: AssetRegistry,
  ) {}

  async check(): Promise<Readiness> {
    const checks: HealthIndicatorFunction[] = [
      this.indicator('postgres', async () => {
        // pingCheck resolves to a result, "down" included, rather than throwing: read it (awaited alone, a
        // Postgres that was away left readiness 200).
        const result = await this.typeorm.pingCheck('postgres');
        const check = result.postgres as { status?: string; message?: unknown } | undefined;
        if (check?.status !== 'up') throw new Error(typeof check?.message === 'string' ? check.message : 'Postgres did not answer SELECT 1');
      }),
      this.indicator('redis', async () => {
        await this.redis.main.ping();
      }),
      ...MODES.filter((m) => this.config.chains[m]).map((mode) => this.indicator(`chain_${mode}`, () => this.chain(mode))),
    ];
    try {
      const result = await this.health.check(checks);
      return { up: true, body: { ok: true, ...result } };
    } catch (e) {
      if (!(e instanceof ServiceUnavailableException)) throw e;
      return { up: false, body: { ok: false, ...(e.getResponse() as HealthCheckResult) } };
    }
  }

  private indicator(key: string, fn: () => Promise<Record<string, unknown> | void>): HealthIndicatorFunction {
    return () =>
      this.indicators
        .check(key)
        .attempt(async () => {
          try {
            return await this.once(key, fn);
          } catch (e) {
            throw new Error(publicMessage(e));
          }
        })
        .withTimeout(CHECK_TIMEOUT_MS)
        .cacheFor(CHECK_CACHE_MS);
  }

  /** A check still running from an earlier call (past its timeout) is joined, not started again. */
  private once(key: string, fn: () => Promise<Record<string, unknown> | void>): Promise<Record<string, unknown> | void> {
    let p = this.inFlight.get(key);
    if (!p) {
      p = fn().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    return p;
  }

  private async chain(mode: Mode): Promise<Record<string, unknown>> {
    const configured = this.config.chains[mode]!;
    const state = await this.assets.refresh(mode);
    if (state.state === 'unreachable') throw new Error(`RPC unreachable: ${state.detail}`);
    if (state.state === 'chain_id_mismatch' || state.state === 'no_token_contract') throw new Error(state.detail);
    if (state.state === 'not_configured') throw new Error('not configured');
    const reader = this.assets.reader(mode);
    if (!reader) throw new Error('no chain reader');
    // The registry's state is from its last connect; ask the node now.
    const chainId = await reader.chainId();
    if (chainId !== configured.chainId) {
      throw new Error(`RPC reports chain id ${chainId}, configured CHAIN_${mode.toUpperCase()}_CHAIN_ID is ${configured.chainId}`);
    }
    return { chain_id: chainId.toString() };
  }
}
