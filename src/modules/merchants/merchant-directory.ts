import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CHANGE_TOPICS, ChangeFeed } from '../../database/change-feed';
import { FeedCache } from '../../database/feed-cache';
import { MerchantRepository } from './merchant.repository';

/** What creating a request needs to know of its merchant. */
export interface MerchantForCreate {
  id: string;
  partner_id: string;
  test_mode: boolean;
  onboarding_status: string;
  disabled: boolean;
  display_currency: string;
  wallet_address: string | null;
}

const TTL_MS = 5000;
const MAX_ENTRIES = 50000;

/**
 * Merchants as the create path reads them, cached in process: the merchant lookup is a round trip of every
 * create. Every change that matters to create (disable, enable, wallet, onboarding, currency) is made through
 * change(), which announces it on the Postgres change feed in the change's own transaction: every instance
 * evicts the entry when it commits, and while the feed is down create reads Postgres. The cache is only a
 * shortcut besides: the schema's payment_requests_merchant_holds rule refuses a request whose merchant is no
 * longer enabled, onboarded, on the same wallet and currency (see
 * migrations/1764000001000-request-merchant-check.ts), so a stale entry can never create a request.
 */
@Injectable()
export class MerchantDirectory implements OnModuleInit {
  private readonly cache: FeedCache<MerchantForCreate>;

  constructor(private readonly repo: MerchantRepository, private readonly feed: ChangeFeed) {
    this.cache = new FeedCache(feed, { ttlMs: TTL_MS, maxEntries: MAX_ENTRIES });
  }

  onModuleInit(): void {
    this.feed.subscribe(CHANGE_TOPICS.merchants, (id) => this.cache.delete(id));
  }

  async forCreate(id: string): Promise<MerchantForCreate | null> {
    const hit = this.cache.get(id);
    if (hit) return hit;
    const mark = this.cache.mark();
    const row = await this.repo.findForCreate(id);
    if (!row) return null;
    const m: MerchantForCreate = {
      id: row.id,
      partner_id: row.partnerId,
      test_mode: row.testMode,
      onboarding_status: row.onboardingStatus,
      disabled: row.disabled,
      display_currency: row.displayCurrency,
      wallet_address: row.walletAddress,
    };
    this.cache.set(id, m, mark);
    return m;
  }

  /** Forgets this instance's entry (create found it stale). */
  evict(id: string): void {
    this.cache.delete(id);
  }

  /**
   * Runs a change of the merchant in a transaction that tells every instance, at commit, to forget it; `also`
   * announces another merchant the same change touched. The change first waits for the merchant's request
   * inserts in flight, and holds later ones off until it commits (lockForChange).
   */
  change<T>(id: string, work: (em: EntityManager, also: (otherId: string) => Promise<void>) => Promise<T>): Promise<T> {
    return this.feed.change(CHANGE_TOPICS.merchants, async (em, announce) => {
      await this.repo.lockForChange(em, id);
      const result = await work(em, announce);
      await announce(id);
      return result;
    });
  }
}
