import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PaymentRequest } from '../domain/payment-request';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { PlanChargesPort, type PlanChargeRef } from './plan-charges.port';

/** Lapsed requests the sweep stores per transaction, and the batches one sweep runs at most. */
const SWEEP_BATCH = 1000;
const SWEEP_MAX_BATCHES = 20;

/**
 * Stores expiries (DESIGN §3, §7): every lapsed request, by the sweep (EXPIRY_SWEEP_INTERVAL_MS). Reads show
 * `expired` from expires_at on whether or not it ran, so the sweep's period is only how soon the stored status
 * follows: plans count a missed charge then. Plan charges among them are told to the plans in the same
 * transaction. A delayed job per request used to do this at expires_at; it cost each create a BullMQ add (about
 * 9 % of its CPU) for a stored status no one reads before the sweep would have written it.
 */
@Injectable()
export class ExpiryService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly plans: PlanChargesPort,
  ) {}

  /** One request, for the delayed jobs that versions before the sweep-only expiry queued (ExpiryProcessor). */
  async expireOne(requestId: string): Promise<PaymentRequest | null> {
    return this.dataSource.transaction(async (em) => {
      const expired = await this.repo.applyStatus(requestId, 'expire', { em });
      if (expired?.planId) await this.plans.chargesLapsed(em, [{ requestId: expired.id, planId: expired.planId }]);
      return expired;
    });
  }

  /**
   * Returns how many requests expired: batches of SWEEP_BATCH, each its own transaction, until one comes back
   * short (a backlog after downtime is worked off, SWEEP_MAX_BATCHES per run, without one huge transaction).
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

  private async sweepBatch(): Promise<number> {
    return this.dataSource.transaction(async (em) => {
      const expired = await this.repo.expireLapsed(em, SWEEP_BATCH);
      const charges: PlanChargeRef[] = expired.filter((r) => r.planId !== null).map((r) => ({ requestId: r.id, planId: r.planId! }));
      if (charges.length > 0) await this.plans.chargesLapsed(em, charges);
      return expired.length;
    });
  }
}
