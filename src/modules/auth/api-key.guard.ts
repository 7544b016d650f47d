import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppError } from '../../common/errors';
import type { Principal } from './api-key';
import { addressBucket } from '../../common/rate-limit/client-address';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';
import { REQUIRED_SCOPE, type Scope } from './scopes';

export interface AuthedRequest {
  principal: Principal;
}

/**
 * Bearer key → principal; one identical 401 whatever was wrong; 403 insufficient_scope (DESIGN §3). Calls
 * without a valid key are counted per client address; an address past its budget gets 429 before its key is
 * hashed or looked up (issue 10 point 9).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly reflector: Reflector,
    private readonly failures: AuthFailureLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; ip?: string } & Partial<AuthedRequest>>();
    const address = addressBucket(req.ip);
    this.failures.refuseIfBlocked(address);
    const header = req.headers.authorization;
    const m = header ? /^Bearer ([^\s]+)$/i.exec(header) : null;
    const principal = m ? await this.keys.authenticate(m[1], () => this.failures.refuseIfOverBudget(address)) : null;
    if (!principal) {
      await this.failures.record(address);
      throw new AppError('unauthorized');
    }
    const scope = this.reflector.get<Scope | undefined>(REQUIRED_SCOPE, context.getHandler());
    if (scope && !principal.scopes.has(scope)) throw new AppError('insufficient_scope', { required_scope: scope });
    req.principal = principal;
    return true;
  }
}
