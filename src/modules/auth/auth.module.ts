import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../partners/partners.module';
import { AuditCoreModule } from '../audit/audit-core.module';
import { ApiKeyEntity } from './api-key.entity';
import { ApiKeyRepository } from './api-key.repository';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';

/**
 * API keys and the failed-auth limiter, for both roles (the worker imports it through MerchantsCoreModule).
 * PartnerApiGuard is not provided here: it also needs the HTTP role's RateLimitModule (EndpointLimiter), so
 * Nest builds it in the module of each controller that uses it.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), PartnersModule, AuditCoreModule],
  providers: [ApiKeyRepository, ApiKeyService, AuthFailureLimiter],
  exports: [ApiKeyService, AuthFailureLimiter],
})
export class AuthModule {}
