import { Module } from '@nestjs/common';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';

@Module({ providers: [ApiKeyService, ApiKeyGuard, AuthFailureLimiter], exports: [ApiKeyService, ApiKeyGuard, AuthFailureLimiter] })
export class AuthModule {}
