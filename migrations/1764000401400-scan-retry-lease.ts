import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A retry round of the chain scan leases the undecided transfers it tries (`retry_lease`, with `retry_at`
 * moved past the lease) instead of holding the scan lock across its RPC calls, and writes a decision only
 * while the row still carries its lease. Existing rows have none. Adding a nullable column without a default
 * is a catalog change only; safe to run again.
 */
export class ScanRetryLease1764000401400 implements MigrationInterface {
  name = 'ScanRetryLease1764000401400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE unmatched_transfers ADD COLUMN IF NOT EXISTS retry_lease uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE unmatched_transfers DROP COLUMN IF EXISTS retry_lease`);
  }
}
