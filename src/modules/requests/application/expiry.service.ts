import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { retryingDeadlocks } from '../../../database/pg-errors';
import type { PaymentRequest } from '../domain/payment-request';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { PlanChargeOutcomesPort, type PlanChargeRef } from './plan-charge-outcomes.port';

/** Lapsed requests the sweep stores per transaction, and the batches one sweep runs at most. */
const SWEEP_BATCH = 1000;
const SWEEP_MAX_BATCHES = 20;
/** Runs of a batch Postgres rolled back to end a deadlock (it locks charge → plan, a plan's advance plan → charge). */
const SWEEP_BATCH_ATTEMPTS = 3;

/**
 * Stores expiries (DESIGN §3, §7): every lapsed request (the due second's job and the periodic sweep), or one
 * request (a proof or payment after its deadline; jobs queued by older builds). Plan charges among them are
 * told to the plans in the same transaction (missed charges).
 */
@Injectable()
export class ExpiryService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly plans: PlanChargeOutcomesPort,
  ) {}

  async expireOne(requestId: string): Promise<PaymentRequest | null> {
    return this.dataSource.transaction((em) => this.expireIfLapsed(em, requestId));
  }

  /**
   * In the caller's transaction: stores the expiry of a request that has lapsed and is not stored so (its job
   * or the sweep has not run yet), and counts a plan charge's miss; null when it has not lapsed. Whatever
   * writes a proof or a payment to a request first calls this, so a payment after the deadline leaves it
   * `expired` with its proof (DESIGN §3 "status stays"), as it would be had the job run on time; otherwise
   * the proof would move its lapse to the claim window and show it `requested` again.
   */
  async expireIfLapsed(em: EntityManager, requestId: string): Promise<PaymentRequest | null> {
    const expired = await this.repo.applyStatus(requestId, 'expire', { em });
    if (expired?.planId) await this.plans.chargesLapsed(em, [chargeRef(expired)], this.latestPaidPeriod(em));
    return expired;
  }

  /**
   * In the caller's transaction, with the plan locked: stores the expiry of the plan's charges that have lapsed
   * but are not stored so (their jobs late) and counts their misses; returns how many.
   */
  async expireLapsedCharges(em: EntityManager, planId: string): Promise<number> {
    const expired = await this.repo.expireLapsed(em, SWEEP_BATCH, planId);
    if (expired.length > 0) await this.plans.chargesLapsed(em, expired.map(chargeRef), this.latestPaidPeriod(em));
    return expired.length;
  }

  /**
   * Returns how many requests expired: batches of SWEEP_BATCH, each its own transaction, until one comes back
   * short, so a backlog (the jobs lost with a Redis that went away, a worker down for hours) is worked off in
   * one run, SWEEP_MAX_BATCHES at most, without one huge transaction.
   */
  async sweep(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < SWEEP_MAX_BATCHES; batch++) {
      const expired = await this.sweepBatch();
      total += expired;
      if (expired < SWEEP_BATCH) break;
    }
    return total;
  }

  private sweepBatch(): Promise<number> {
    return retryingDeadlocks(SWEEP_BATCH_ATTEMPTS, () => this.dataSource.transaction(async (em) => {
      const expired = await this.repo.expireLapsed(em, SWEEP_BATCH);
      const charges = expired.filter((r) => r.planId !== null).map(chargeRef);
      if (charges.length > 0) await this.plans.chargesLapsed(em, charges, this.latestPaidPeriod(em));
      return expired.length;
    }));
  }

  private latestPaidPeriod(em: EntityManager): (planId: string) => Promise<number | null> {
    return (planId) => this.repo.latestPaidPeriod(em, planId);
  }
}

/** A plan's charge as the plans count it; every charge has a plan and a period. */
function chargeRef(r: Pick<PaymentRequest, 'id' | 'planId' | 'periodIndex'>): PlanChargeRef {
  return { requestId: r.id, planId: r.planId!, periodIndex: r.periodIndex! };
}
