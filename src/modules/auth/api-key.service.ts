import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig, type Mode } from '../../config/config';
import { AppError } from '../../common/errors';
import { isUuid } from '../../common/ids';
import { CHANGE_TOPICS, ChangeFeed } from '../../database/change-feed';
import { FeedCache } from '../../database/feed-cache';
import { PartnersService } from '../partners/partners.service';
import type { Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { generateApiKey, hashApiKeyHex, modeOfKey, type ApiKeyInfo, type IssuedKey, type Principal } from './api-key';
import { ApiKeyRepository } from './api-key.repository';
import { SCOPES, type Scope } from './scopes';

/** Why a key does not resolve (ApiKeyService.resolve). */
export type Refusal = 'revoked' | 'unknown';

/**
 * Unknown keys are remembered apart, in a map a fifth the size of API_KEY_CACHE_MAX_ENTRIES (2,000 by default),
 * so a flood of bad keys never pushes a valid one out.
 */
const NEGATIVE_SHARE = 5;
const NEGATIVE_TTL_MS = 2000;
/** How long a key that resolved is remembered as one in use (see `known`). */
const KNOWN_TTL_MS = 24 * 3600_000;

/**
 * API keys: issued, listed and revoked for a partner (admin API and portal alike), and resolved from a bearer
 * key to its principal. The key → principal record is cached in process (the lookup is the first cost of
 * every call). Revoking or issuing a key and changing a partner are announced on the Postgres change feed in
 * the transaction of the change, so every instance evicts at commit; while the feed is down nothing is
 * answered from memory (issue 10 point 11: "revoked at once" holds without Redis).
 */
@Injectable()
export class ApiKeyService implements OnModuleInit {
  /** Key hash (hex) → principal. */
  private readonly cache: FeedCache<Principal>;
  /**
   * Key hash (hex) → known not to resolve, and why: `revoked` (a key issued once) or `unknown` (a guess, or a
   * key mistyped). A newly issued key evicts its entry everywhere.
   */
  private readonly negative: FeedCache<Refusal>;
  /**
   * Key hash (hex) → resolved to a principal within the last day (as many as the cache holds; a revoked key is
   * evicted everywhere). A key in use, not a guess: it skips the caller's `beforeLookup` (the failure budget
   * of its address), so a partner's valid keys are never refused for its address's failed calls, a stale
   * revoked key in one of its jobs behind the same NAT say (a partner-docs hunt: spec §8 counts limits per key).
   */
  private readonly known: FeedCache<true>;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: ApiKeyRepository,
    private readonly partners: PartnersService,
    private readonly feed: ChangeFeed,
    private readonly audit: AuditService,
  ) {
    this.cache = new FeedCache(feed, { ttlMs: config.apiKeyCacheMs, maxEntries: config.apiKeyCacheMaxEntries });
    this.negative = new FeedCache(feed, {
      ttlMs: Math.min(NEGATIVE_TTL_MS, config.apiKeyCacheMs),
      maxEntries: Math.floor(config.apiKeyCacheMaxEntries / NEGATIVE_SHARE),
    });
    this.known = new FeedCache(feed, { ttlMs: KNOWN_TTL_MS, maxEntries: config.apiKeyCacheMaxEntries });
  }

  onModuleInit(): void {
    this.feed.subscribe(CHANGE_TOPICS.apiKeys, (hash) => {
      this.cache.delete(hash);
      this.negative.delete(hash);
      this.known.delete(hash);
    });
    // A principal carries the partner's settings: a change of them evicts the partner's keys.
    this.feed.subscribe(CHANGE_TOPICS.partners, (partnerId) => this.cache.deleteWhere((p) => p.partnerId === partnerId));
  }

  /** `beforeLookup` runs only when the answer is not cached, just before the database is asked (it may throw). */
  async authenticate(raw: string, beforeLookup?: () => Promise<void>): Promise<Principal | null> {
    const answer = await this.resolve(raw, beforeLookup);
    return typeof answer === 'string' ? null : answer;
  }

  /**
   * As authenticate, saying why a key does not resolve: `revoked` when it is a key this service issued and
   * revoked (not a guess: the partner API does not count it against the caller's address, see
   * AuthFailureLimiter), `unknown` otherwise.
   */
  async resolve(raw: string, beforeLookup?: () => Promise<void>): Promise<Principal | Refusal> {
    const mode = modeOfKey(this.config.keyPrefix, raw);
    if (!mode || raw.length > 200) return 'unknown';
    // Keyed by the key's hash: the process never keeps a key itself.
    const cacheKey = hashApiKeyHex(raw);
    const hit = this.cache.get(cacheKey);
    if (hit) return hit;
    const refused = this.negative.get(cacheKey);
    if (refused) return refused;
    if (!this.known.get(cacheKey)) await beforeLookup?.();
    const marks = [this.cache.mark(), this.negative.mark(), this.known.mark()] as const;
    const answer = await this.load(Buffer.from(cacheKey, 'hex'), mode);
    if (typeof answer === 'string') {
      this.negative.set(cacheKey, answer, marks[1]);
    } else {
      this.cache.set(cacheKey, answer, marks[0]);
      this.known.set(cacheKey, true, marks[2]);
    }
    return answer;
  }

  /** A new key for the partner (404 when there is none); all four scopes unless some are named. */
  async issue(partnerId: string, input: { mode: Mode; scopes?: Scope[]; label?: string }, actor: Actor): Promise<IssuedKey> {
    await this.partners.get(partnerId);
    const key = generateApiKey(this.config.keyPrefix, input.mode);
    const info = await this.feed.change(CHANGE_TOPICS.apiKeys, async (em, announce) => {
      const inserted = await this.repo.insert(em, {
        partnerId, mode: input.mode, scopes: input.scopes ?? [...SCOPES], keyHash: key.hash, displayPrefix: key.displayPrefix, label: input.label ?? null,
      });
      // No instance may keep refusing it from its negative cache.
      await announce(key.hash.toString('hex'));
      await this.audit.record(em, actor, {
        partnerId, action: 'key.issued', targetId: inserted.id,
        details: { mode: inserted.mode, scopes: inserted.scopes, label: inserted.label, display_prefix: inserted.displayPrefix },
      });
      return inserted;
    });
    return { ...info, apiKey: key.raw };
  }

  async list(partnerId: string): Promise<ApiKeyInfo[]> {
    await this.partners.get(partnerId);
    return this.repo.listByPartner(partnerId);
  }

  /** Revoked at once on every instance: the row is marked and every instance evicts it when that commits. */
  async revoke(partnerId: string, keyId: string, actor: Actor): Promise<{ id: string; revokedAt: Date }> {
    // The portal's revoke form posts the key id in its body: no route pipe has checked it.
    if (!isUuid(partnerId) || !isUuid(keyId)) throw AppError.notFound();
    const row = await this.feed.change(CHANGE_TOPICS.apiKeys, async (em, announce) => {
      const revoked = await this.repo.revoke(em, partnerId, keyId);
      if (revoked) {
        await announce(revoked.keyHash.toString('hex'));
        await this.audit.record(em, actor, {
          partnerId, action: 'key.revoked', targetId: keyId,
          details: { display_prefix: revoked.displayPrefix, already_revoked: revoked.alreadyRevoked },
        });
      }
      return revoked;
    });
    if (!row) throw AppError.notFound();
    return { id: keyId, revokedAt: row.revokedAt };
  }

  /**
   * A partner key's write (a merchant create, a cancel) with the key held live until it commits: a call the
   * guard admitted, then kept waiting (for a pool connection behind slow queries) past the key's revocation,
   * answers 401 and changes nothing, and a revocation answers only after the writes that got in first have
   * committed. A request create checks its key in the insert's trigger instead (no row lock on the hot path).
   */
  async whileLive<T>(keyId: string, write: (em: EntityManager) => Promise<T>): Promise<T> {
    const done = await this.repo.whileLive(keyId, write);
    if (!done) throw new AppError('unauthorized');
    return done.result;
  }

  private async load(hash: Buffer, mode: Mode): Promise<Principal | Refusal> {
    const key = await this.repo.findByHash(hash);
    if (!key || key.mode !== mode) return 'unknown';
    if (key.revokedAt !== null) return 'revoked';
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
