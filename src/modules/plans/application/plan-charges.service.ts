import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { PartnersService } from '../../partners/partners.service';
import type { PaymentRequest } from '../../requests/domain/payment-request';
import { SERVICE_MODE_DEFAULT_EXPIRY_MINUTES } from '../../requests/domain/request-rules';
import { RequestsService, type RequestCreator } from '../../requests/application/requests.service';
import { afterCharge, type Plan } from '../domain/plan';
import { dueAt } from '../domain/schedule';
import { PlansRepository } from '../infrastructure/plans.repository';
import { PlanChargeNotices } from './charge-notices';

export interface ChargeOutcome {
  request: PaymentRequest;
  created: boolean;
  /** The charge notices written with it, queued once the transaction commits. */
  notices: string[];
}

/**
 * Creates a plan's charge for period k and advances the plan, in the caller's transaction with the plan
 * locked: the scheduler, the plan's create (a start_at already due) and the test clock's advance all come
 * here. The charge goes through the create path of every request (amount uniqueness, rate snapshot, the
 * merchant rule); its idempotency key `plan:<plan>:<k>` (a colon never appears in a partner's key) and the
 * unique (plan_id, period_index) make a second charge for one period impossible.
 */
@Injectable()
export class PlanChargesService {
  constructor(
    private readonly requests: RequestsService,
    private readonly partners: PartnersService,
    private readonly plans: PlansRepository,
    private readonly notices: PlanChargeNotices,
  ) {}

  async charge(em: EntityManager, plan: Plan, k: number): Promise<ChargeOutcome> {
    const outcome = await this.requests.createIn(em, await this.creatorOf(plan, em), {
      merchantId: plan.merchantId,
      fiatAmount: plan.fiatAmount,
      // An assertion, as a partner's fiat_currency_code is: a plan charges in its own currency or not at all.
      fiatCurrencyCode: plan.fiatCurrency,
      memo: plan.title,
      idempotencyKey: `plan:${plan.id}:${k}`,
      // Exactly the plan's (spec §1): partners tell their customers' charges apart by it.
      metadata: plan.metadata,
      paymentMode: plan.payerName !== null ? 'service' : 'pos',
      customerName: plan.payerName ?? undefined,
      customerEmail: plan.payerEmail ?? undefined,
      expiryMinutes: plan.expiryMinutes,
      source: 'plan',
      planId: plan.id,
      periodIndex: k,
    });
    await this.plans.update(em, plan.id, afterCharge(plan, k, outcome.created));
    const notices = outcome.created
      ? await this.notices.chargeCreated(em, {
          requestId: outcome.request.id,
          planId: plan.id,
          periodIndex: k,
          payerEmail: plan.payerEmail,
          dueAt: dueAt({ startAt: plan.startAt, interval: plan.interval, intervalCount: plan.intervalCount }, k),
        })
      : [];
    return { ...outcome, notices };
  }

  /**
   * In the caller's transaction, with the plan locked: the plan's charges that have lapsed but whose expiry is
   * not stored yet (the expiry job late: Redis away, the worker down) are stored now, each counting its miss,
   * so what the caller decides next (charge the next period, or not: the misses may pause the plan) sees the
   * plan as the job would have left it. Returns how many were stored; the caller reads the plan again then.
   */
  storeLapsed(em: EntityManager, plan: Plan): Promise<number> {
    return this.requests.expireLapsedCharges(em, plan.id);
  }

  /** After the transaction committed: the charge's expiry job and its notices. */
  async committed(outcome: ChargeOutcome | null | undefined): Promise<void> {
    if (!outcome?.created) return;
    await Promise.all([this.requests.created(outcome.request), this.notices.committed(outcome.notices)]);
  }

  /** The plan's expiry is checked against these when the plan is made: the partner's values and 10080. */
  async allowedExpiryMinutes(partnerId: string): Promise<number[]> {
    const p = await this.partners.get(partnerId);
    return [...new Set([...p.allowedExpiryMinutes, SERVICE_MODE_DEFAULT_EXPIRY_MINUTES])].sort((a, b) => a - b);
  }

  private async creatorOf(plan: Plan, em: EntityManager): Promise<RequestCreator> {
    const p = await this.partners.get(plan.partnerId, em);
    return {
      partnerId: p.id,
      mode: plan.testMode ? 'test' : 'live',
      // The plan's expiry was checked against these when the plan was made (DESIGN §5: also 10080).
      allowedExpiryMinutes: [...p.allowedExpiryMinutes, SERVICE_MODE_DEFAULT_EXPIRY_MINUTES, plan.expiryMinutes],
      defaultExpiryMinutes: p.defaultExpiryMinutes,
    };
  }
}
