import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { AppError } from '../../common/errors';
import { isUuid } from '../../common/ids';
import { RedisConnections } from '../../common/redis/redis.module';
import { PartnersService } from '../admin/partners.service';
import { generateApiKey, hashApiKey, modeOfKey, type ApiKeyInfo, type IssuedKey, type Principal } from './api-key';
import { ApiKeyRepository } from './api-key.repository';
import { SCOPES, type Scope } from './scopes';

interface CacheEntry {
  principal: Principal;
  expires: number;
}

const MAX_CACHE = 10000;
/** Unknown keys are remembered apart, in a smaller map, so a flood of bad keys never pushes a valid one out. */
const MAX_NEGATIVE = 2000;
const NEGATIVE_TTL_MS = 2000;

/**
 * API keys: issued, listed and revoked for a partner (admin API and portal alike), and resolved from a bearer
 * key to its principal. The key → principal record is cached in process (the lookup is
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
    private readonly repo: ApiKeyRepository,
    private readonly partners: PartnersService,
    private readonly redis: RedisConnections,
  ) {}

  async onModuleInit(): Promise<void> {
    // A principal carries the partner's settings: a change of them evicts the partner's keys everywhere.
    this.partners.onChange((partnerId) => this.invalidate(`partner:${partnerId}`));
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

  /** A new key for the partner (404 when there is none); all four scopes unless some are named. */
  async issue(partnerId: string, input: { mode: Mode; scopes?: Scope[]; label?: string }): Promise<IssuedKey> {
    await this.partners.get(partnerId);
    const key = generateApiKey(this.config.keyPrefix, input.mode);
    const info = await this.repo.insert({
      partnerId, mode: input.mode, scopes: input.scopes ?? [...SCOPES], keyHash: key.hash, displayPrefix: key.displayPrefix, label: input.label ?? null,
    });
    return { ...info, apiKey: key.raw };
  }

  async list(partnerId: string): Promise<ApiKeyInfo[]> {
    await this.partners.get(partnerId);
    return this.repo.listByPartner(partnerId);
  }

  /** Revoked at once on every instance: the row is marked and the cached record evicted everywhere. */
  async revoke(partnerId: string, keyId: string): Promise<{ id: string; revokedAt: Date }> {
    // The portal's revoke form posts the key id in its body: no route pipe has checked it.
    if (!isUuid(partnerId) || !isUuid(keyId)) throw AppError.notFound();
    const row = await this.repo.revoke(partnerId, keyId);
    if (!row) throw AppError.notFound();
    await this.invalidate(row.keyHash.toString('hex'));
    return { id: keyId, revokedAt: row.revokedAt };
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
    const key = await this.repo.findActiveByHash(hash);
    if (!key || key.mode !== mode) return null;
    const partner = await this.partners.get(key.partnerId);
    return {
      keyId: key.id,
      partnerId: key.partnerId,
      partnerSlug: partner.slug,
      mode: key.mode,
      scopes: new Set(key.scopes as Scope[]),
      defaultCurrency: partner.defaultCurrency,
      allowedExpiryMinutes: partner.allowedExpiryMinutes,
      defaultExpiryMinutes: partner.defaultExpiryMinutes,
    };
  }
}
