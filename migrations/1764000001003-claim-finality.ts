import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Finality (DESIGN §7): a verified claim remembers the block its log was in and is re-read until it is
 * twice the confirmation depth deep (or finalized), then settled; a claim whose log vanished is marked
 * lost and reported in `alerts`, owned by the alerts module. Claims verified before this release are
 * taken as settled: nothing recorded which block held them.
 */
export class ClaimFinality1764000001003 implements MigrationInterface {
  name = 'ClaimFinality1764000001003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE payment_requests ADD COLUMN claimed_block_number bigint, ADD COLUMN claimed_block_hash text,
        ADD COLUMN claim_settled_at timestamptz(3), ADD COLUMN claim_lost_at timestamptz(3)`);
    await q.query(`
      UPDATE payment_requests SET claim_settled_at = COALESCE(proof_verified_at, now())
       WHERE proof_status = 'verified'`);
    // The settle job's selection: verified claims neither settled nor lost, per asset, oldest block first.
    await q.query(`
      CREATE INDEX payment_requests_unsettled ON payment_requests (chain_id, token_address, claimed_block_number)
       WHERE proof_status = 'verified' AND claim_settled_at IS NULL AND claim_lost_at IS NULL`);
    await q.query(`
      CREATE TABLE alerts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        kind text NOT NULL CHECK (kind IN ('verified_reorged')),
        request_id uuid REFERENCES payment_requests(id),
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX alerts_created ON alerts (created_at, id)`);
    // One alert of a kind per request, whatever the number of workers re-reading it.
    await q.query(`CREATE UNIQUE INDEX alerts_request_kind ON alerts (request_id, kind)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE alerts`);
    await q.query(`DROP INDEX payment_requests_unsettled`);
    await q.query(`
      ALTER TABLE payment_requests DROP COLUMN claimed_block_number, DROP COLUMN claimed_block_hash,
        DROP COLUMN claim_settled_at, DROP COLUMN claim_lost_at`);
  }
}
