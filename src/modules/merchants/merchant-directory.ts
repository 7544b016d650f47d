import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { RedisConnections } from '../../common/redis/redis.module';
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
 * create. Every change that matters to create (disable, enable, wallet, onboarding, currency) calls
 * changed(), which evicts the entry on every instance through Redis at once; the short TTL bounds staleness
 * should a message be lost. The cache is only a shortcut: the schema's payment_requests_merchant_holds rule
 * refuses a request whose merchant is no longer enabled, onboarded, on the same wallet and currency (see
 * migrations/1764000001000-request-merchant-check.ts), so a stale entry can never create a request.
 */
@Injectable()
export class MerchantDirectory implements OnModuleInit {
  private readonly logger = new Logger('MerchantDirectory');
  private readonly cache = new Map<string, { m: MerchantForCreate; expires: number }>();
  private generation = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly repo: MerchantRepository, private readonly redis: RedisConnections) {}

  async onModuleInit(): Promise<void> {
    await this.redis
      .subscribe('merchant-changed', (id) => this.evict(id))
      .catch((e: Error) => this.logger.warn(`cannot subscribe to merchant changes: ${e.message}`));
  }

  async forCreate(id: string): Promise<MerchantForCreate | null> {
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && hit.expires > now) return hit.m;
    const generation = this.generation;
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
    if (generation !== this.generation) return m;
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(id, { m, expires: now + TTL_MS });
    return m;
  }

  evict(id: string): void {
    this.generation++;
    this.cache.delete(id);
  }

  async changed(id: string): Promise<void> {
    this.evict(id);
    await this.redis.publish('merchant-changed', id).catch((e: Error) =>
      this.logger.error(`could not publish a merchant change (${id}); other instances keep it up to ${TTL_MS} ms: ${e.message}`),
    );
  }
}
