import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PartnersModule } from '../admin/partners.module';
import { AuthModule } from '../auth/auth.module';
import { MerchantDirectory } from './merchant-directory';
import { MerchantEntity } from './merchant.entity';
import { MerchantHandleEntity } from './merchant-handle.entity';
import { MerchantHandleRepository } from './merchant-handle.repository';
import { MerchantHandlesService } from './merchant-handles.service';
import { MerchantRepository } from './merchant.repository';
import { MerchantGate } from './merchant-gate.service';
import { MerchantsController } from './merchants.controller';
import { MerchantsService } from './merchants.service';
import { OnboardingController } from './onboarding.controller';
import { OnboardingService } from './onboarding.service';

@Module({
  imports: [TypeOrmModule.forFeature([MerchantEntity, MerchantHandleEntity]), PartnersModule, AuthModule],
  controllers: [MerchantsController, OnboardingController],
  providers: [MerchantRepository, MerchantsService, OnboardingService, MerchantDirectory, MerchantGate, MerchantHandleRepository, MerchantHandlesService],
  exports: [MerchantsService, OnboardingService, MerchantDirectory, MerchantGate, MerchantHandlesService],
})
export class MerchantsModule {}
