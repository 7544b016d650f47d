import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PlanChargeOutcomesPort } from '../requests/application/plan-charge-outcomes.port';
import { PlanChargeNotices } from './application/charge-notices';
import { PLAN_CLOCK, systemClock, type Clock } from './application/clock';
import { PlanOutcomesService } from './application/plan-outcomes.service';
import { OutboxChargeNotices } from './infrastructure/outbox-charge-notices';
import { PlanEntity } from './infrastructure/plan.entity';
import { PlansRepository } from './infrastructure/plans.repository';

export interface PlansModuleOptions {
  /** When the scheduler thinks it is (tests move it); the system clock by default. */
  clock?: Clock;
}

/**
 * What both roles of the plans module share: the plans table, the clock, the charge-notice hook, and the
 * PlanChargeOutcomesPort that requests declares (missed and paid charges). Global so that requests' verification and
 * expiry can inject the port without importing plans (plans depends on requests, never the reverse).
 */
@Global()
@Module({})
export class PlansCoreModule {
  static forRoot(opts: PlansModuleOptions = {}): DynamicModule {
    return {
      module: PlansCoreModule,
      imports: [TypeOrmModule.forFeature([PlanEntity])],
      providers: [
        PlansRepository,
        PlanOutcomesService,
        { provide: PlanChargeOutcomesPort, useExisting: PlanOutcomesService },
        { provide: PLAN_CLOCK, useValue: opts.clock ?? systemClock },
        { provide: PlanChargeNotices, useClass: OutboxChargeNotices },
      ],
      exports: [PlansRepository, PlanChargeOutcomesPort, PLAN_CLOCK, PlanChargeNotices],
    };
  }
}
