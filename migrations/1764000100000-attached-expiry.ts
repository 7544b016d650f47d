import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * DESIGN §7: a request whose attached proof has not verified when its claim window closes expires. The sweep
 * finds those by claim_until, as it finds unproven ones by expires_at (payment_requests_expiring).
 */
export class AttachedExpiry1764000100000 implements MigrationInterface {
  name = 'AttachedExpiry1764000100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX payment_requests_attached_expiring ON payment_requests (claim_until)
      WHERE status IN ('requested','opened') AND proof_status = 'attached'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payment_requests_attached_expiring`);
  }
}
