import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A user's portal sign-ins, newest first (audit_events_sign_ins): where a sign-in that Redis does not remember
 * looks for the addresses the owner signed in from (PortalAuthService), so an owner under attack is not locked
 * out after Redis lost its keys. Partial: sign-ins only, a small part of the audit trail.
 */
export class AuditSignInsIndex1764000403500 implements MigrationInterface {
  name = 'AuditSignInsIndex1764000403500';
  /** Outside a transaction, so the index is built CONCURRENTLY (audit rows are written with the changes they record). */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS audit_events_sign_ins`); // a build interrupted earlier leaves it invalid
    await q.query(`CREATE INDEX CONCURRENTLY audit_events_sign_ins ON audit_events (target_id, at) WHERE action = 'portal_user.signed_in'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS audit_events_sign_ins`);
  }
}
