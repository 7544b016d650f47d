import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Bearer ADMIN_TOKEN, compared in constant time. The admin listener alone routes here (see bootstrap). */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer;
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.expected = digest(config.adminToken);
  }

  canActivate(context: ExecutionContext): boolean {
    const header = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization;
    const m = header ? /^Bearer (.+)$/i.exec(header) : null;
    if (!m || !timingSafeEqual(digest(m[1]), this.expected)) throw new AppError('unauthorized');
    return true;
  }
}
