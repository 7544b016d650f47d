import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail of operator and partner-portal changes (keys, merchants, webhook settings, portal users,
 * redeliveries, partners, rate refreshes), owned by the audit module. Each row is written in the transaction
 * of the change it records. Rows are history: no foreign keys (a removed portal user or a future partner
 * deletion must not take its trail along), and the table is append-only in the database itself: UPDATE,
 * DELETE and TRUNCATE raise. `details` never holds secrets, keys, tokens or password hashes.
 */
export class AuditEvents1764000400700 implements MigrationInterface {
  name = 'AuditEvents1764000400700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        at timestamptz(3) NOT NULL DEFAULT now(),
        actor_kind text NOT NULL,
        actor_id uuid,
        client_address text,
        partner_id uuid,
        action text NOT NULL,
        target_id uuid,
        details jsonb NOT NULL DEFAULT '{}',
        CONSTRAINT audit_events_actor_check CHECK (
          (actor_kind = 'admin' AND actor_id IS NULL) OR (actor_kind = 'portal_user' AND actor_id IS NOT NULL AND partner_id IS NOT NULL)),
        CONSTRAINT audit_events_action_check CHECK (action IN (
          'partner.created', 'partner.updated', 'key.issued', 'key.revoked', 'merchant.disabled', 'merchant.enabled',
          'webhook.updated', 'webhook.secret_rotated', 'webhook.rotation_confirmed', 'delivery.redelivered',
          'rates.refreshed', 'portal_user.added', 'portal_user.removed', 'portal_user.role_changed',
          'portal_user.password_changed'))
      )`);
    // The admin list (newest first, optionally from `since`) and a partner's own list (admin filter, portal page).
    await q.query(`CREATE INDEX audit_events_at ON audit_events (at, id)`);
    await q.query(`CREATE INDEX audit_events_partner_at ON audit_events (partner_id, at, id)`);
    await q.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
        FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
    await q.query(`
      CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
        FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
    await q.query(`DROP FUNCTION audit_events_append_only()`);
  }
}
