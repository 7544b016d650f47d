import { Module } from '@nestjs/common';
import { PartnersModule } from '../partners/partners.module';
import { MerchantsCoreModule } from '../merchants/merchants-core.module';
import { RequestsServiceModule } from '../requests/requests-service.module';
import { PlanChargesService } from './application/plan-charges.service';
import { PlanSchedulerService } from './application/plan-scheduler.service';
import { PlansProcessor } from './infrastructure/plans.processor';

/** The plan scheduler (worker role): one BullMQ job scheduler for the deployment, charges as they fall due. */
@Module({
  imports: [PartnersModule, MerchantsCoreModule, RequestsServiceModule],
  providers: [PlanChargesService, PlanSchedulerService, PlansProcessor],
  exports: [PlanSchedulerService],
})
export class PlansWorkerModule {}
