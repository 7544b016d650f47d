import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A plan made twice is a payer charged twice every period. The dashboard's plan form sends an Idempotency-Key
 * (one per rendering, as the request form does), so a create retried after a lost answer, or sent twice,
 * replays the first plan: one key per merchant names one plan.
 */
export class PlanIdempotency1764000400500 implements MigrationInterface {
  name = 'PlanIdempotency1764000400500';
  /**
   * Outside a transaction, so the index is built CONCURRENTLY and plan changes never wait for it. Safe to run
   * again after a failure at any step (the column is added once; an interrupted build leaves an invalid index,
   * dropped first). Revert with `--transaction none`.
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE plans ADD COLUMN IF NOT EXISTS idempotency_key text`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS plans_idempotency`);
    await q.query(`CREATE UNIQUE INDEX CONCURRENTLY plans_idempotency ON plans (merchant_id, idempotency_key) WHERE idempotency_key IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS plans_idempotency`);
    await q.query(`ALTER TABLE plans DROP COLUMN IF EXISTS idempotency_key`);
  }
}
