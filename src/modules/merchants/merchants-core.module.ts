import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../partners/partners.module';
import { AuditCoreModule } from '../audit/audit-core.module';
import { AuthModule } from '../auth/auth.module';
import { MerchantDirectory } from './merchant-directory';
import { MerchantEntity } from './merchant.entity';
import { MerchantHandleEntity } from './merchant-handle.entity';
import { MerchantHandleRepository } from './merchant-handle.repository';
import { MerchantHandlesService } from './merchant-handles.service';
import { MerchantRepository } from './merchant.repository';
import { MerchantGate } from './merchant-gate.service';
import { MerchantsService } from './merchants.service';
import { OnboardingService } from './onboarding.service';

/** The merchants table and its use cases, without HTTP: what the worker role (the plan scheduler) may import. */
@Module({
  imports: [TypeOrmModule.forFeature([MerchantEntity, MerchantHandleEntity]), PartnersModule, AuthModule, AuditCoreModule],
  providers: [MerchantRepository, MerchantsService, OnboardingService, MerchantDirectory, MerchantGate, MerchantHandleRepository, MerchantHandlesService],
  exports: [MerchantsService, OnboardingService, MerchantDirectory, MerchantGate, MerchantHandlesService],
})
export class MerchantsCoreModule {}
