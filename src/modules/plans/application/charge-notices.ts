import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** A plan charge just created, for the charge notice to the plan's payer (DESIGN §6). */
export interface ChargeCreated {
  requestId: string;
  planId: string;
  periodIndex: number;
  payerEmail: string | null;
  payPageUrl: string;
  dueAt: Date;
}

/**
 * The hook for charge notices (DESIGN §6: "a charge notice to the plan's payer_email when a charge is
 * created"). Called inside the transaction that creates the charge, so a notice exists exactly when its
 * charge does. The notifications module provides the real one; until it does, NoChargeNotices sends nothing.
 */
export abstract class PlanChargeNotices {
  abstract chargeCreated(em: EntityManager, charge: ChargeCreated): Promise<void>;
}

@Injectable()
export class NoChargeNotices extends PlanChargeNotices {
  async chargeCreated(): Promise<void> {}
}
