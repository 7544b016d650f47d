import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { handleProblem, normalizeHandle } from './handle';
import { MerchantHandleRepository } from './merchant-handle.repository';

/** Merchants' public handles (DESIGN §5): claimed in the dashboard, read by the public handle page. */
@Injectable()
export class MerchantHandlesService {
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

  /** Malformed or reserved → 400 invalid_handle; held or once held by another merchant → 409 handle_taken. */
  async claim(merchantId: string, raw: string): Promise<string> {
    const problem = handleProblem(raw);
    if (problem) throw new AppError('invalid_handle', { errors: [{ field: 'handle', message: problem }] });
    const handle = normalizeHandle(raw);
    if (!(await this.repo.claim(merchantId, handle))) throw new AppError('handle_taken');
    return handle;
  }
}
