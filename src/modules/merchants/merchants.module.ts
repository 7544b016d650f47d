import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsController } from './merchants.controller';
import { MerchantsCoreModule } from './merchants-core.module';
import { OnboardingController } from './onboarding.controller';

/** The partner API on merchants and the onboarding API (HTTP role). */
@Module({
  imports: [MerchantsCoreModule, AuthModule],
  controllers: [MerchantsController, OnboardingController],
  exports: [MerchantsCoreModule],
})
export class MerchantsModule {}
