import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { PlanChargeOutcomesPort, type PaidPlanCharge, type PlanChargeRef } from '../../requests/application/plan-charge-outcomes.port';
import { afterPaid, missesAmong } from '../domain/plan';
import { PlansRepository } from '../infrastructure/plans.repository';
import { PLAN_CLOCK, type Clock } from './clock';

/**
 * The plans' side of PlanChargeOutcomesPort (DESIGN §5): a charge that expired unpaid is missed unless a later charge
 * was paid (missesAmong), PLAN_MAX_MISSED in a row pause the plan (reason unpaid), a paid charge resets the count to the misses after it and, when those
 * are too few to pause a plan paused for unpaid, resumes the plan (afterPaid). Runs in the transaction of the
 * request's change.
 */
@Injectable()
export class PlanOutcomesService extends PlanChargeOutcomesPort {
  private readonly logger = new Logger('PlanOutcomes');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(PLAN_CLOCK) private readonly clock: Clock,
    private readonly plans: PlansRepository,
  ) {
    super();
  }

  async chargesLapsed(
    em: EntityManager,
    charges: readonly PlanChargeRef[],
    latestPaidPeriod: (planId: string) => Promise<number | null>,
  ): Promise<void> {
    const perPlan = new Map<string, number[]>();
    for (const c of charges) perPlan.set(c.planId, [...(perPlan.get(c.planId) ?? []), c.periodIndex]);
    // A stable order, so two sweeps' transactions lock plans alike.
    for (const planId of [...perPlan.keys()].sort()) {
      // Locked before the paid charges are read, as a verification reads the misses: whichever commits second
      // sees the other's change.
      if (!(await this.plans.lock(em, planId))) continue;
      const missed = missesAmong(perPlan.get(planId)!, await latestPaidPeriod(planId));
      if (missed > 0) await this.plans.countMissed(em, planId, missed, this.config.planMaxMissed);
    }
  }

  async chargePaid(em: EntityManager, charge: PaidPlanCharge): Promise<void> {
    // Locked like every change of a plan: a sweep counting a miss, or the scheduler, waits for this decision.
    const plan = await this.plans.lock(em, charge.planId);
    if (!plan) return;
    const missedSince = await charge.missedSince();
    const next = afterPaid(plan, missedSince, this.config.planMaxMissed, this.clock.now());
    await this.plans.update(em, plan.id, next);
    if (next.status !== plan.status) this.logger.log(`plan ${plan.id} resumed: its charge ${charge.requestId} (period ${charge.periodIndex}) was paid, ${missedSince} missed since`);
  }
}
