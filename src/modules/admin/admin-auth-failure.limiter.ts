import { Injectable } from '@nestjs/common';
import { AuthFailureLimiter } from '../auth/auth-failure.limiter';

/**
 * Failed admin authentication, counted per client address apart from the partner API's: wrong bearer tokens
 * on /admin/api/* and wrong basic-auth credentials on the queue board share this one budget, since one
 * ADMIN_TOKEN guards both. The same mechanism and limit (AUTH_FAILURE_RATE_LIMIT × RATE_LIMIT_SCALE a minute).
 */
@Injectable()
export class AdminAuthFailureLimiter extends AuthFailureLimiter {
  protected override readonly counter = 'admin-authfail';
}
