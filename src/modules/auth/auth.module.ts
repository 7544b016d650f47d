import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../admin/partners.module';
import { ApiKeyEntity } from './api-key.entity';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeyRepository } from './api-key.repository';
import { ApiKeyService } from './api-key.service';
import { AuthFailureLimiter } from './auth-failure.limiter';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), PartnersModule],
  providers: [ApiKeyRepository, ApiKeyService, ApiKeyGuard, AuthFailureLimiter],
  exports: [ApiKeyService, ApiKeyGuard, AuthFailureLimiter],
})
export class AuthModule {}
