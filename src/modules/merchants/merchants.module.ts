import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantDirectory } from './merchant-directory';
import { MerchantGate } from './merchant-gate.service';
import { MerchantsController } from './merchants.controller';
import { MerchantsService } from './merchants.service';
import { OnboardingController } from './onboarding.controller';
import { OnboardingService } from './onboarding.service';

@Module({
  imports: [AuthModule],
  controllers: [MerchantsController, OnboardingController],
  providers: [MerchantsService, OnboardingService, MerchantDirectory, MerchantGate],
  exports: [MerchantsService, OnboardingService, MerchantDirectory, MerchantGate],
})
export class MerchantsModule {}
