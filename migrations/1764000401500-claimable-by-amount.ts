import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The chain scan names the request a transfer pays by (chain, token, recipient, amount), and lists the wallets
 * to watch per (chain, token). With payment_requests_claimable ending at recipient, both read every open
 * request of a wallet: at 1,000,000 open requests of one merchant a sequential scan of the table, 167 ms per
 * transfer and 194 ms per scan (EXPLAIN ANALYZE, 2026-11-27). With amount in the key the transfer's request
 * is one index probe (0.07 ms) and the wallets a loose index scan (0.1 ms). The same rows as before, so no
 * write costs more beyond the wider key.
 */
export class ClaimableByAmount1764000401500 implements MigrationInterface {
  name = 'ClaimableByAmount1764000401500';
  /**
   * Outside a transaction, so the index is built CONCURRENTLY beside the one it replaces (a plain build would
   * block every create and verification on payment_requests for its duration). Safe to run again after a
   * failure at any step. TypeORM's revert ignores this flag: revert it with `--transaction none`.
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await replaceIndex(q, `(chain_id, token_address, recipient, amount) WHERE proof_status <> 'verified' AND amount_locked`);
  }

  async down(q: QueryRunner): Promise<void> {
    await replaceIndex(q, `(chain_id, token_address, recipient) WHERE proof_status <> 'verified' AND amount_locked`);
  }
}

async function replaceIndex(q: QueryRunner, definition: string): Promise<void> {
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS payment_requests_claimable_next`);
  await q.query(`CREATE INDEX CONCURRENTLY payment_requests_claimable_next ON payment_requests ${definition}`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS payment_requests_claimable`);
  await q.query(`ALTER INDEX payment_requests_claimable_next RENAME TO payment_requests_claimable`);
}
