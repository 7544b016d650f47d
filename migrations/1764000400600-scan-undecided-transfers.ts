import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A transfer the chain scan found but could not decide yet (its verification had to wait: a load-balanced
 * RPC whose backend is behind, a reorg under way) names the request it may pay. The scan retries it until it
 * is decided, whatever its cursor has read meanwhile, and that request's amount stays held until then.
 * Outside a transaction, so the index is built CONCURRENTLY; safe to run again after a failure at any step.
 * Revert with `--transaction none`.
 */
export class ScanUndecidedTransfers1764000400600 implements MigrationInterface {
  name = 'ScanUndecidedTransfers1764000400600';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE unmatched_transfers ADD COLUMN IF NOT EXISTS pending_request_id uuid`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS unmatched_transfers_pending`);
    await q.query(
      `CREATE INDEX CONCURRENTLY unmatched_transfers_pending ON unmatched_transfers (pending_request_id) WHERE pending_request_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS unmatched_transfers_pending`);
    await q.query(`ALTER TABLE unmatched_transfers DROP COLUMN IF EXISTS pending_request_id`);
  }
}
