import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { Db } from '../../database/db';
import { RedisConnections } from '../../common/redis/redis.module';
import { hashApiKey, modeOfKey, type Principal } from './api-key';
import type { Scope } from './scopes';

interface CacheEntry {
  principal: Principal;
  expires: number;
}

const MAX_CACHE = 10000;
/** Unknown keys are remembered apart, in a smaller map, so a flood of bad keys never pushes a valid one out. */
const MAX_NEGATIVE = 2000;
const NEGATIVE_TTL_MS = 2000;

/**
 * Resolves a bearer key to its principal. The key → principal record is cached in process (the lookup is
 * the first cost of every call); a revocation or partner change is published on Redis and evicts the entry
 * on every instance at once, and the TTL bounds staleness should a message be lost.
 */
@Injectable()
export class ApiKeyService implements OnModuleInit {
  private readonly logger = new Logger('ApiKeys');
  private readonly cache = new Map<string, CacheEntry>();
  /** Key hash → until when it is known not to resolve. */
  private readonly negative = new Map<string, number>();
  /** Counts invalidations, so a load that raced one is not cached. */
  private generation = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly redis: RedisConnections,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.redis
      .subscribe('auth-invalidate', (msg) => this.evict(msg))
      .catch((e: Error) => this.logger.warn(`cannot subscribe to invalidations: ${e.message}`));
  }

  /** `beforeLookup` runs only when the answer is not cached, just before the database is asked (it may throw). */
  async authenticate(raw: string, beforeLookup?: () => Promise<void>): Promise<Principal | null> {
    const mode = modeOfKey(this.config.keyPrefix, raw);
    if (!mode || raw.length > 200) return null;
    // Keyed by the key's hash: the process never keeps a key itself.
    const hash = hashApiKey(raw);
    const cacheKey = hash.toString('hex');
    const now = Date.now();
    const hit = this.cache.get(cacheKey);
    if (hit && hit.expires > now) return hit.principal;
    if ((this.negative.get(cacheKey) ?? 0) > now) return null;
    await beforeLookup?.();
    const generation = this.generation;
    const principal = await this.load(hash, mode);
    // An invalidation that arrived while the row was being read may concern it: use the answer, keep nothing.
    if (generation !== this.generation) return principal;
    if (principal) {
      this.cache.delete(cacheKey);
      // Maps iterate in insertion order: the first entry is the oldest load.
      if (this.cache.size >= MAX_CACHE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(cacheKey, { principal, expires: now + this.config.apiKeyCacheMs });
    } else if (this.config.apiKeyCacheMs > 0) {
      this.negative.delete(cacheKey);
      if (this.negative.size >= MAX_NEGATIVE) this.negative.delete(this.negative.keys().next().value!);
      this.negative.set(cacheKey, now + Math.min(NEGATIVE_TTL_MS, this.config.apiKeyCacheMs));
    }
    return principal;
  }

  /** Tells every instance to drop cached keys: by key hash (hex) or `partner:<id>`. */
  async invalidate(target: string): Promise<void> {
    this.evict(target);
    try {
      await this.redis.publish('auth-invalidate', target);
    } catch (e) {
      this.logger.error(`could not publish key invalidation (${target}); other instances keep it up to ${this.config.apiKeyCacheMs} ms: ${(e as Error).message}`);
    }
  }

  private evict(target: string): void {
    this.generation++;
    if (target.startsWith('partner:')) {
      const partnerId = target.slice('partner:'.length);
      for (const [k, v] of this.cache) if (v.principal.partnerId === partnerId) this.cache.delete(k);
    } else {
      this.cache.delete(target);
      this.negative.delete(target);
    }
  }

  private async load(hash: Buffer, mode: Mode): Promise<Principal | null> {
    const rows = await this.db.query<{
      id: string; partner_id: string; mode: Mode; scopes: Scope[]; slug: string;
      allowed_expiry_minutes: number[]; default_expiry_minutes: number; default_currency: string;
    }>(
      `SELECT k.id, k.partner_id, k.mode, k.scopes, p.slug, p.allowed_expiry_minutes, p.default_expiry_minutes,
              p.default_currency
         FROM api_keys k JOIN partners p ON p.id = k.partner_id
        WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [hash],
      'api_key_by_hash',
    );
    const row = rows[0];
    if (!row || row.mode !== mode) return null;
    return {
      keyId: row.id,
      partnerId: row.partner_id,
      partnerSlug: row.slug,
      mode: row.mode,
      scopes: new Set(row.scopes),
      defaultCurrency: row.default_currency,
      allowedExpiryMinutes: row.allowed_expiry_minutes,
      defaultExpiryMinutes: row.default_expiry_minutes,
    };
  }
}
