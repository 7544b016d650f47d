import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsController } from './merchants.controller';
import { MerchantsService } from './merchants.service';
import { OnboardingController } from './onboarding.controller';
import { OnboardingService } from './onboarding.service';

@Module({
  imports: [AuthModule],
  controllers: [MerchantsController, OnboardingController],
  providers: [MerchantsService, OnboardingService],
  exports: [MerchantsService, OnboardingService],
})
export class MerchantsModule {}
