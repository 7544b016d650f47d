import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * payment_requests_claimable covers every request whose amount is held, verified or not. It left verified
 * requests out, so the chain scan stopped watching a wallet the moment its last open request was paid: a
 * payer's second transfer of the same amount (a retried send, a double click in the wallet) left no unmatched
 * row for the merchant or operators to see, only the chain's record. A verified request holds its amount
 * until its claim window has closed by both clocks (see releaseClosedAmounts), so its wallet is now watched
 * until then and such a transfer is kept as `request_already_verified`. The index gains only the verified
 * rows still in their window; proof_status is in other indexes' keys, so no update that was HOT stops being so.
 */
export class ClaimableWhileLocked1764000402700 implements MigrationInterface {
  name = 'ClaimableWhileLocked1764000402700';
  /**
   * Outside a transaction, so the index is built CONCURRENTLY beside the one it replaces (a plain build would
   * block every create and verification on payment_requests for its duration). Safe to run again after a
   * failure at any step. TypeORM's revert ignores this flag: revert it with `--transaction none`.
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await rebuild(q, `amount_locked`);
  }

  async down(q: QueryRunner): Promise<void> {
    await rebuild(q, `proof_status <> 'verified' AND amount_locked`);
  }
}

async function rebuild(q: QueryRunner, predicate: string): Promise<void> {
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS payment_requests_claimable_next`);
  await q.query(
    `CREATE INDEX CONCURRENTLY payment_requests_claimable_next ON payment_requests (chain_id, token_address, recipient, amount) WHERE ${predicate}`,
  );
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS payment_requests_claimable`);
  await q.query(`ALTER INDEX payment_requests_claimable_next RENAME TO payment_requests_claimable`);
}
