import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An alert can be resolved: `claim_unmovable` is, by finality, once its claim moves, settles or is lost
 * (`verified_reorged` never is: nothing the service sees undoes a lost payment). One open alert per request
 * and kind, so a claim stuck again after its first alert was resolved raises a new one. alerts is a small
 * table (one row per reorged or stuck claim): the index is rebuilt in the migration's transaction.
 * Down deletes the resolved alerts: the old index allows one row per request and kind.
 */
export class AlertResolved1764000402000 implements MigrationInterface {
  name = 'AlertResolved1764000402000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE alerts ADD COLUMN resolved_at timestamp(3) with time zone`);
    await q.query(`DROP INDEX alerts_request_kind`);
    await q.query(`CREATE UNIQUE INDEX alerts_request_kind ON alerts (request_id, kind) WHERE (resolved_at IS NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM alerts WHERE resolved_at IS NOT NULL`);
    await q.query(`DROP INDEX alerts_request_kind`);
    await q.query(`CREATE UNIQUE INDEX alerts_request_kind ON alerts (request_id, kind)`);
    await q.query(`ALTER TABLE alerts DROP COLUMN resolved_at`);
  }
}
