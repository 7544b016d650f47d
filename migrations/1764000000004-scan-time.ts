import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The chain scan keeps the timestamp of the last block it handled, so an amount is released only once the
 * scan has seen every block that could still pay its request (not when the wall clock passes claim_until).
 */
export class ScanTime1764000000004 implements MigrationInterface {
  name = 'ScanTime1764000000004';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE chain_cursors ADD COLUMN last_block_time timestamptz(3)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE chain_cursors DROP COLUMN last_block_time`);
  }
}
