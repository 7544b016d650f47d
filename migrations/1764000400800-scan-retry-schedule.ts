import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The chain scan's retries of undecided transfers get a schedule of their own, so old stuck rows cannot
 * starve newer ones: `retry_at` (the next try; retries take the earliest first), `retries` (tries so far, for
 * the back-off), `retry_tip` (the tip at the last try of a transfer that waits for a block: not tried again
 * before the tip passes it). `block_hash`: the block the transfer was seen in, to tell the same transaction
 * mined again in another block from a second transfer of one transaction. Existing rows are due at once.
 * Outside a transaction, so the index is built CONCURRENTLY; safe to run again after a failure at any step.
 * Revert with `--transaction none`.
 */
export class ScanRetrySchedule1764000400800 implements MigrationInterface {
  name = 'ScanRetrySchedule1764000400800';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE unmatched_transfers
         ADD COLUMN IF NOT EXISTS block_hash text,
         ADD COLUMN IF NOT EXISTS retries integer NOT NULL DEFAULT 0,
         ADD COLUMN IF NOT EXISTS retry_at timestamptz(3) NOT NULL DEFAULT now(),
         ADD COLUMN IF NOT EXISTS retry_tip bigint`,
    );
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS unmatched_transfers_retry`);
    await q.query(
      `CREATE INDEX CONCURRENTLY unmatched_transfers_retry ON unmatched_transfers (chain_id, token_address, retry_at)
         WHERE pending_request_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS unmatched_transfers_retry`);
    await q.query(
      `ALTER TABLE unmatched_transfers
         DROP COLUMN IF EXISTS retry_tip, DROP COLUMN IF EXISTS retry_at, DROP COLUMN IF EXISTS retries,
         DROP COLUMN IF EXISTS block_hash`,
    );
  }
}
