import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AppError } from '../../common/errors';
import { raiseBodyProblem, type ParsedRequest } from '../../common/http/body';
import { EndpointLimiter } from '../../common/rate-limit/endpoint-limiter';
import type { Principal } from './api-key';
import { addressBucket } from '../../common/rate-limit/client-address';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';
import { REQUIRED_SCOPE, type Scope } from './scopes';

/** A rate-limit count slower than this has the key read again before the call goes on. */
const RECHECK_AFTER_MS = 100;

export interface AuthedRequest {
  principal: Principal;
}

/**
 * The partner API's guard, DESIGN §3's checks in their order: bearer key → principal (one identical 401
 * whatever was wrong), 403 insufficient_scope, the endpoint's rate limit per key (429), then the deferred body
 * failure (invalid_json, payload_too_large, unsupported_media_type). Calls without a valid key are counted per
 * client address; an address past its budget gets 429 before its key is hashed or looked up (issue 10
 * point 9). One guard rather than three (key, RateLimitGuard, BodyCheckGuard): the partner API's hot paths
 * pay one step of Nest's guard pipeline, and the limit is read from @RateLimit without ThrottlerGuard's
 * per-call option resolution. The counter is the one RateLimitGuard would use (EndpointLimiter).
 */
@Injectable()
export class PartnerApiGuard implements CanActivate {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly reflector: Reflector,
    private readonly failures: AuthFailureLimiter,
    private readonly limits: EndpointLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; ip?: string } & Partial<AuthedRequest> & ParsedRequest>();
    const handler = context.getHandler();
    const address = addressBucket(req.ip);
    const header = req.headers.authorization;
    const m = header ? /^Bearer ([^\s]+)$/i.exec(header) : null;
    // An address over its failure budget is refused before any lookup of a key not known to be in use; a key
    // that resolved before is looked up and let in as usual (ApiKeyService.known).
    const answer = m ? await this.keys.resolve(m[1], () => this.failures.refuseIfOverBudget(address)) : 'unknown';
    if (typeof answer === 'string') {
      this.failures.refuseIfBlocked(address);
      // A revoked key is one the partner was given, not a guess: a stale one left in a partner's job spends no
      // budget of the address its other jobs share (a partner-docs hunt; spec §8 counts limits per key).
      if (answer === 'unknown') await this.failures.record(address);
      throw new AppError('unauthorized');
    }
    const principal = answer;
    const scope = this.reflector.get<Scope | undefined>(REQUIRED_SCOPE, handler);
    if (scope && !principal.scopes.has(scope)) throw new AppError('insufficient_scope', { required_scope: scope });
    req.principal = principal;
    const counted = Date.now();
    await this.limits.consume(context.getClass(), handler, `key:${principal.keyId}`);
    // A count that took long (Redis slow, or away: up to its command timeout, then the limit fails open) may
    // have let a revocation land meanwhile: the key is read again, so no call acts on a key revoked while it
    // waited (a create answered 201 850 ms after its key's revocation had).
    if (Date.now() - counted > RECHECK_AFTER_MS && !(await this.keys.authenticate(m![1]))) throw new AppError('unauthorized');
    raiseBodyProblem(req);
    return true;
  }
}
