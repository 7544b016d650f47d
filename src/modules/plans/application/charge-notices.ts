import type { EntityManager } from 'typeorm';

/** A plan charge just created, for the charge notice to the plan's payer (DESIGN §6). */
export interface ChargeCreated {
  requestId: string;
  planId: string;
  periodIndex: number;
  payerEmail: string | null;
  dueAt: Date;
}

/**
 * Charge notices (DESIGN §6: "a charge notice to the plan's payer_email when a charge is created"). Written
 * inside the transaction that creates the charge, so a notice exists exactly when its charge does, then handed
 * to delivery once that transaction has committed. Provided by infrastructure/outbox-charge-notices.ts.
 */
export abstract class PlanChargeNotices {
  /** In the charge's transaction; returns the ids of the messages written (none when email is off). */
  abstract chargeCreated(em: EntityManager, charge: ChargeCreated): Promise<string[]>;
  /** After the commit; never rejects (the notifications re-drive sends what this could not queue). */
  abstract committed(ids: string[]): Promise<void>;
}
