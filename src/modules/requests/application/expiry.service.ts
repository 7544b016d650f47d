import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PaymentRequest } from '../domain/payment-request';
import { RequestsRepository } from '../infrastructure/requests.repository';
import { PlanChargesPort, type PlanChargeRef } from './plan-charges.port';

/**
 * Stores expiries (DESIGN §3, §7): one request at its expires_at (the delayed job), or every lapsed request
 * (the sweep). Plan charges among them are told to the plans in the same transaction (missed charges).
 */
@Injectable()
export class ExpiryService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: RequestsRepository,
    private readonly plans: PlanChargesPort,
  ) {}

  async expireOne(requestId: string): Promise<PaymentRequest | null> {
    return this.dataSource.transaction(async (em) => {
      const expired = await this.repo.applyStatus(requestId, 'expire', { em });
      if (expired?.planId) await this.plans.chargesLapsed(em, [{ requestId: expired.id, planId: expired.planId }]);
      return expired;
    });
  }

  /** Returns how many requests expired. */
  async sweep(): Promise<number> {
    return this.dataSource.transaction(async (em) => {
      const expired = await this.repo.expireLapsed(em);
      const charges: PlanChargeRef[] = expired.filter((r) => r.planId !== null).map((r) => ({ requestId: r.id, planId: r.planId! }));
      if (charges.length > 0) await this.plans.chargesLapsed(em, charges);
      return expired.length;
    });
  }
}
