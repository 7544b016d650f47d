import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A late payment left a plan paused (DESIGN §5): a charge can be verified in the grace window after its expiry
 * counted as missed, and that only reset the count, so a plan it had paused for unpaid stayed paused though
 * the payer was current. Now the payment of a plan's latest charge resumes a plan paused for unpaid (afterPaid
 * in the plans domain); latest_charge_period, set with each charge, names that charge, and is filled here from
 * the charges that exist. Charges the previous release creates after this ran leave it behind until it is run
 * again (it is safe to run again: it only adds what is missing and sets what differs).
 */
export class PlanLatestCharge1764000400310 implements MigrationInterface {
  name = 'PlanLatestCharge1764000400310';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE plans ADD COLUMN IF NOT EXISTS latest_charge_period integer`);
    await q.query(`
      UPDATE plans p SET latest_charge_period = c.k
        FROM (SELECT plan_id, max(period_index) AS k FROM payment_requests WHERE plan_id IS NOT NULL GROUP BY plan_id) c
       WHERE c.plan_id = p.id AND p.latest_charge_period IS DISTINCT FROM c.k`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE plans DROP COLUMN IF EXISTS latest_charge_period`);
  }
}
