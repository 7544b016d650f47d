import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { PlanChargesPort, type PlanChargeRef } from '../../requests/application/plan-charges.port';
import { PlansRepository } from '../infrastructure/plans.repository';

/**
 * The plans' side of PlanChargesPort (DESIGN §5): a charge that expired unpaid is missed, PLAN_MAX_MISSED in
 * a row pause the plan (reason unpaid), a paid charge resets the count. Runs in the transaction of the
 * request's change.
 */
@Injectable()
export class PlanOutcomesService extends PlanChargesPort {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig, private readonly plans: PlansRepository) {
    super();
  }

  async chargesLapsed(em: EntityManager, charges: readonly PlanChargeRef[]): Promise<void> {
    const perPlan = new Map<string, number>();
    for (const c of charges) perPlan.set(c.planId, (perPlan.get(c.planId) ?? 0) + 1);
    // A stable order, so two sweeps' transactions lock plans alike.
    for (const planId of [...perPlan.keys()].sort()) await this.plans.countMissed(em, planId, perPlan.get(planId)!, this.config.planMaxMissed);
  }

  async chargePaid(em: EntityManager, charge: PlanChargeRef): Promise<void> {
    await this.plans.resetMissed(em, charge.planId);
  }
}
