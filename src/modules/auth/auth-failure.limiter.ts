import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { RedisConnections } from '../../common/redis/redis.module';
import { scaledLimit } from '../../common/rate-limit/rate-limit';

const MINUTE = 60000;
/** Addresses this instance remembers as over budget; beyond it the oldest is forgotten (Redis still knows). */
const MAX_BLOCKED = 10000;

/**
 * Partner API calls without a valid key (none, malformed, unknown; a revoked key is not a guess and is not
 * counted, see PartnerApiGuard), counted per client address
 * bucket and clock minute in Redis, shared by every instance. Once an address has used its budget
 * (AUTH_FAILURE_RATE_LIMIT × RATE_LIMIT_SCALE), its calls get 429 rate_limited until the minute ends, before
 * the database is asked about the key they send: from memory on this instance, after one Redis read on
 * another. A key known to be in use (it resolved before, ApiKeyService.known) is not a guess, and is looked
 * up and let in as usual: spec §8 counts limits per key, and a partner's stale revoked key in one job must not
 * lock its valid keys out of an address they share (a partner-docs hunt). Keys are 256 random bits, so letting
 * the right one in teaches a guesser nothing it could use; the admin token, an operator's choice, has no such
 * exception (AdminTokenGuard). Fails open when Redis is away, like every other limiter.
 */
@Injectable()
export class AuthFailureLimiter {
  /** The Redis counter's name: each surface whose credentials are limited counts on its own. */
  protected readonly counter: string = 'authfail';
  private readonly logger = new Logger('AuthFailureLimiter');
  /** Address bucket → end of the minute it is refused in. */
  private readonly blocked = new Map<string, number>();
  private lastWarn = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly redis: RedisConnections,
  ) {}

  private get limit(): number {
    return scaledLimit(this.config.authFailureRateLimit, this.config.rateLimitScale);
  }

  private key(address: string, windowStart: number): string {
    return `${this.redis.channel(this.counter)}:${address}:${windowStart}`;
  }

  /** No I/O: 429 when this instance already knows the address is over budget this minute. */
  refuseIfBlocked(address: string): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    if (until > this.redis.now()) throw new AppError('rate_limited');
    this.blocked.delete(address);
  }

  /**
   * Before a key lookup: 429 when the address is over budget, from memory when this instance knows it, else
   * after one Redis read (counted by any instance).
   */
  async refuseIfOverBudget(address: string): Promise<void> {
    this.refuseIfBlocked(address);
    const now = this.redis.now();
    const start = now - (now % MINUTE);
    let used: number;
    try {
      used = Number((await this.redis.main.get(this.key(address, start))) ?? 0);
    } catch (e) {
      this.warn(e as Error);
      return;
    }
    if (used >= this.limit) {
      this.block(address, start + MINUTE);
      throw new AppError('rate_limited');
    }
  }

  /** Counts a call that ended in 401 (and, past the budget, remembers the address as refused). */
  async record(address: string): Promise<void> {
    const now = this.redis.now();
    const start = now - (now % MINUTE);
    try {
      const used = await this.redis.hitWindow(this.key(address, start), start + MINUTE + 1000);
      if (used >= this.limit) this.block(address, start + MINUTE);
    } catch (e) {
      this.warn(e as Error);
    }
  }

  private block(address: string, until: number): void {
    this.blocked.delete(address);
    if (this.blocked.size >= MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
    this.blocked.set(address, until);
  }

  private warn(e: Error): void {
    const now = Date.now();
    if (now - this.lastWarn < 10000) return;
    this.lastWarn = now;
    this.logger.error(`auth failure limiter (${this.counter}) cannot reach Redis, letting calls through: ${e.message}`);
  }
}
