import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { retryingDeadlocks } from '../../../database/pg-errors';
import { MerchantGate } from '../../merchants/merchant-gate.service';
import { afterChargeFailed, afterSkip, periodToCharge, type Plan } from '../domain/plan';
import { PlansRepository } from '../infrastructure/plans.repository';
import { PLAN_CLOCK, type Clock } from './clock';
import { PlanChargesService, type ChargeOutcome } from './plan-charges.service';

/**
 * A plan's transaction that Postgres rolled back for a deadlock (the expiry job or the sweep holding its lapsed
 * charge: they lock the charge, then its plan; a run locks the plan, then the charge) is run again at once, this
 * many times in all, before it counts as a failed charge and waits out the backoff.
 */
const CHARGE_ATTEMPTS = 3;

/**
 * Charges the plans that are due (DESIGN §5), selected by state, not by a "since the last run" window: every
 * active plan whose next_charge_at has come, each locked FOR UPDATE SKIP LOCKED in its own transaction, which
 * creates the latest due period's charge and moves the plan on. So workers share the due plans without
 * waiting for each other, a crash rolls back both the charge and the advance, and after downtime a plan gets
 * one charge, for its latest due period. A disabled merchant's periods are skipped (not missed). A plan whose
 * charge fails stays due and is tried again after a backoff (afterChargeFailed), sorted by its retry time, so
 * plans that keep failing never fill every run ahead of the plans that can be charged.
 */
@Injectable()
export class PlanSchedulerService {
  private readonly logger = new Logger('PlanScheduler');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(PLAN_CLOCK) private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly plans: PlansRepository,
    private readonly charges: PlanChargesService,
    private readonly merchants: MerchantGate,
  ) {}

  /** Returns how many plans were charged, skipped or paused. Throws, after trying every due plan, if any failed. */
  async run(): Promise<{ charged: number; skipped: number; paused: number }> {
    const now = this.clock.now();
    const failed = new Map<string, Error>();
    let charged = 0;
    let skipped = 0;
    let paused = 0;
    for (let i = 0; i < this.config.planSchedulerBatch; i++) {
      let seen: Plan | undefined;
      try {
        const outcome = await retryingDeadlocks(CHARGE_ATTEMPTS, () => this.dataSource.transaction(async (em) => {
          let plan = await this.plans.lockNextDue(em, now, [...failed.keys()]);
          if (!plan) return null;
          seen = plan;
          // A charge that lapsed while its expiry job is late counts its miss first: enough misses pause the
          // plan, and a paused plan gets no next charge (nor its notice to the payer).
          if (await this.charges.storeLapsed(em, plan)) {
            plan = (await this.plans.lock(em, plan.id))!;
            if (plan.status !== 'active') return 'paused' as const;
          }
          const k = periodToCharge(plan, now);
          const merchant = await this.merchants.currentForCreate(plan.merchantId, em);
          if (merchant?.disabled) {
            await this.plans.update(em, plan.id, afterSkip(plan, k));
            return 'skipped' as const;
          }
          return this.charges.charge(em, plan, k);
        }));
        if (outcome === null) break;
        if (outcome === 'skipped') skipped++;
        else if (outcome === 'paused') paused++;
        else {
          charged++;
          // Committed: the charge exists whatever happens now. Its expiry and notices are backed by the sweep and
          // the notifications re-drive; a failure here is not the plan's failure (that path would log "could not
          // be charged" for a plan just charged).
          const planId = seen?.id;
          await this.charges.committed(outcome as ChargeOutcome).catch((e: Error) =>
            this.logger.warn(`plan ${planId}: charge created, but handing on its expiry and notices failed: ${e.message}; the expiry sweep and the notifications re-drive will`),
          );
        }
      } catch (e) {
        if (!seen) throw e;
        // Rolled back: the plan stays due, tried again once its retry time has come; the other plans go on now.
        failed.set(seen.id, e as Error);
        await this.failedAttempt(seen, e as Error, now);
      }
    }
    if (failed.size > 0) {
      const [[id, first]] = failed;
      throw new Error(`${failed.size} due plan(s) could not be charged, e.g. ${id}: ${first.message}`);
    }
    if (charged || skipped || paused) {
      this.logger.log(`charged ${charged} plans, skipped ${skipped} (merchant disabled), paused ${paused} (a lapsed charge's miss, its expiry job late)`);
    }
    return { charged, skipped, paused };
  }

  private async failedAttempt(plan: Plan, e: Error, now: Date): Promise<void> {
    const next = afterChargeFailed(plan, now);
    const stored = await this.plans.recordFailure(plan, next);
    const when = stored ? `retry at ${next.retryAt!.toISOString()} (failure ${next.chargeFailures})` : 'changed meanwhile, not stored';
    this.logger.warn(`plan ${plan.id}: charge of its due period failed: ${e.message}; ${when}`);
  }
}
