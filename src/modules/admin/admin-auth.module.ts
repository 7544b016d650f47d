import { Global, Module } from '@nestjs/common';
import { AdminAuthFailureLimiter } from './admin-auth-failure.limiter';
import { AdminTokenGuard } from './admin-token.guard';

/**
 * The admin listener's credentials check (HTTP role), global because every module with an /admin/api
 * controller uses AdminTokenGuard, and the queue board (mounted in bootstrap) uses the limiter.
 */
@Global()
@Module({ providers: [AdminAuthFailureLimiter, AdminTokenGuard], exports: [AdminAuthFailureLimiter, AdminTokenGuard] })
export class AdminAuthModule {}
