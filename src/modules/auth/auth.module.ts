import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../admin/partners.module';
import { ApiKeyEntity } from './api-key.entity';
import { ApiKeyRepository } from './api-key.repository';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';
import { PartnerApiGuard } from './partner-api.guard';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), PartnersModule],
  providers: [ApiKeyRepository, ApiKeyService, PartnerApiGuard, AuthFailureLimiter],
  exports: [ApiKeyService, PartnerApiGuard, AuthFailureLimiter],
})
export class AuthModule {}
