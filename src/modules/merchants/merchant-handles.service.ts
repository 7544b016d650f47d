import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { HANDLE_CLAIM_WINDOW_MS, HANDLE_CLAIMS_PER_DAY, handleProblem, normalizeHandle } from './handle';
import { MerchantHandleRepository } from './merchant-handle.repository';

/** Merchants' public handles (DESIGN §5): claimed in the dashboard, read by the public handle page. */
@Injectable()
export class MerchantHandlesService {
  private readonly logger = new Logger('MerchantHandles');

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly repo: MerchantHandleRepository) {}

  /** `PUBLIC_URL/m/<handle>`. */
  url(handle: string): string {
    return `${this.config.publicUrl}/m/${handle}`;
  }

  currentOf(merchantId: string): Promise<string | null> {
    return this.repo.currentOf(merchantId);
  }

  /** The merchant behind a current handle; a retired, unknown or malformed one is null. */
  async merchantOf(raw: string): Promise<string | null> {
    if (handleProblem(raw)) return null;
    return this.repo.merchantOf(normalizeHandle(raw));
  }

  /**
   * Malformed or reserved → 400 invalid_handle; held or once held by another merchant → 409 handle_taken,
   * unless this one is live and that one a test merchant: a live merchant takes over a test merchant's handle
   * (see MerchantHandleRepository.claim); a sixth new handle within 24 hours → 429 rate_limited.
   */
  async claim(merchantId: string, raw: string): Promise<string> {
    const problem = handleProblem(raw);
    if (problem) throw new AppError('invalid_handle', { errors: [{ field: 'handle', message: problem }] });
    const handle = normalizeHandle(raw);
    const claimed = await this.repo.claim(merchantId, handle, { count: HANDLE_CLAIMS_PER_DAY, windowMs: HANDLE_CLAIM_WINDOW_MS });
    const outcome = claimed.outcome;
    if (claimed.outcome === 'taken_from_test') {
      this.logger.warn(`live merchant ${merchantId} took the handle ${handle} over from test merchant ${claimed.from}`);
    }
    if (outcome === 'taken') throw new AppError('handle_taken');
    if (outcome === 'limited') {
      throw new AppError('rate_limited', { errors: [{ field: 'handle', message: `at most ${HANDLE_CLAIMS_PER_DAY} new handles in 24 hours` }] });
    }
    return handle;
  }
}
