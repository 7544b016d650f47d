import { Module } from '@nestjs/common';
import { PartnersModule } from '../partners/partners.module';
import { DashboardModule } from '../dashboard/dashboard.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { RequestsModule } from '../requests/requests.module';
import { PlanChargesService } from './application/plan-charges.service';
import { PlansService } from './application/plans.service';
import { PayerPlanController } from './http/payer-plan.controller';
import { PlansController } from './http/plans.controller';

/** Recurring plans over HTTP (DESIGN §5): the dashboard's plans API and the payer's plan API. */
@Module({
  imports: [PartnersModule, MerchantsModule, RequestsModule, DashboardModule],
  controllers: [PlansController, PayerPlanController],
  providers: [PlanChargesService, PlansService],
  exports: [PlansService],
})
export class PlansModule {}
