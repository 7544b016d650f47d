import { Module } from '@nestjs/common';
import { PartnersModule } from '../admin/partners.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { RequestsModule } from '../requests/requests.module';
import { PlanChargesService } from './application/plan-charges.service';
import { PlanSchedulerService } from './application/plan-scheduler.service';
import { PlansProcessor } from './infrastructure/plans.processor';

/** The plan scheduler (worker role): one BullMQ job scheduler for the deployment, charges as they fall due. */
@Module({
  imports: [PartnersModule, MerchantsModule, RequestsModule],
  providers: [PlanChargesService, PlanSchedulerService, PlansProcessor],
  exports: [PlanSchedulerService],
})
export class PlansWorkerModule {}
