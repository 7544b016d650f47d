import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Failing plans starved the others (DESIGN §5 "A due charge exists within 15 s of its due time"): a plan whose
 * charge fails (its merchant's currency lost its rate, the chain is off, any error) kept its next_charge_at,
 * and the scheduler takes at most 200 due plans a run, oldest due first, so 200 plans that keep failing filled
 * every run and no other plan was ever charged. Now a failed attempt is counted (charge_failures) and the plan
 * waits until retry_at (a backoff) before it is tried again; plans_due orders the active plans by
 * GREATEST(next_charge_at, retry_at), the time each is next tried, so a failing plan sorts behind every plan
 * that came due before its retry time. Both reset when the plan moves on.
 */
export class PlanChargeRetries1764000400300 implements MigrationInterface {
  name = 'PlanChargeRetries1764000400300';
  /**
   * Outside a transaction, so plans_due is built CONCURRENTLY beside the one it replaces (a plain DROP INDEX
   * takes an ACCESS EXCLUSIVE lock on plans, and every scheduler run, pause or payment would wait for the
   * build). The columns are nullable or take a constant default (no rewrite), the check is validated apart
   * (no exclusive lock while the rows are read). Safe to run again after a failure at any step. TypeORM's
   * revert ignores this flag: revert it with `--transaction none` (typeorm migration:revert).
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE plans
        ADD COLUMN IF NOT EXISTS charge_failures integer NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS retry_at timestamptz(3)`);
    await q.query(`
      ALTER TABLE plans
        DROP CONSTRAINT IF EXISTS plans_charge_failures_check,
        ADD CONSTRAINT plans_charge_failures_check CHECK (charge_failures >= 0) NOT VALID`);
    await q.query(`ALTER TABLE plans VALIDATE CONSTRAINT plans_charge_failures_check`);
    await replaceIndex(q, 'plans_due', `((GREATEST(next_charge_at, retry_at))) WHERE status = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await replaceIndex(q, 'plans_due', `(next_charge_at) WHERE status = 'active'`);
    await q.query(`
      ALTER TABLE plans
        DROP CONSTRAINT IF EXISTS plans_charge_failures_check,
        DROP COLUMN IF EXISTS retry_at,
        DROP COLUMN IF EXISTS charge_failures`);
  }
}

/** Builds `name` anew on plans with `definition` (columns and predicate), never locking the table's reads or writes. */
async function replaceIndex(q: QueryRunner, name: string, definition: string): Promise<void> {
  const next = `${name}_next`;
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${next}`);
  await q.query(`CREATE INDEX CONCURRENTLY ${next} ON plans ${definition}`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await q.query(`ALTER INDEX ${next} RENAME TO ${name}`);
}
