import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A second kind of alert, `claim_unmovable`: a verified claim whose transaction was re-included at log indexes
 * it cannot take (a claim outside its unsettled ones holds one), so finality cannot follow it. The check is
 * replaced in the migration's transaction (alerts is a small table, and no alert is written without a check).
 * Down deletes the `claim_unmovable` alerts: the old check would refuse them.
 */
export class AlertClaimUnmovable1764000401900 implements MigrationInterface {
  name = 'AlertClaimUnmovable1764000401900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check`);
    await q.query(`ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check CHECK (kind IN ('verified_reorged', 'claim_unmovable'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM alerts WHERE kind = 'claim_unmovable'`);
    await q.query(`ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check`);
    await q.query(`ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check CHECK (kind IN ('verified_reorged'))`);
  }
}
