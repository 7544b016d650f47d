import type { EntityManager } from 'typeorm';

/** A plan's charge whose outcome the plan must count (DESIGN §5: missed charges, a paid charge resets). */
export interface PlanChargeRef {
  requestId: string;
  planId: string;
  periodIndex: number;
}

/** A verified charge (DESIGN §5). */
export interface PaidPlanCharge extends PlanChargeRef {
  /**
   * Reads how many of the plan's charges lapsed unpaid after its latest paid one, in the verifying transaction:
   * call it once the plan is locked, so a charge of the same plan verified meanwhile is counted.
   */
  missedSince(): Promise<number>;
}

/**
 * What happens to plan charges, told to whoever keeps the plans. Declared here, by the requests module whose
 * state changes it reports; the plans module (which depends on requests) provides it, so requests never
 * imports plans. Called inside the transaction that changes the request, so a miss or a payment is counted
 * exactly when the change commits.
 */
export abstract class PlanChargeOutcomesPort {
  /**
   * These charges expired unpaid (the expiry job or the sweep stored the expiry). `latestPaidPeriod` reads, in
   * the same transaction, the period of a plan's latest paid charge (null: none): call it once the plan is
   * locked, so a charge of the plan verified meanwhile is seen.
   */
  abstract chargesLapsed(
    em: EntityManager,
    charges: readonly PlanChargeRef[],
    latestPaidPeriod: (planId: string) => Promise<number | null>,
  ): Promise<void>;
  /** This charge was verified (on time, or late: within the grace window after it was counted missed). */
  abstract chargePaid(em: EntityManager, charge: PaidPlanCharge): Promise<void>;
}
