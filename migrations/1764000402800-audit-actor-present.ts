import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A change recorded as a portal user's commits only while that user is still one of the partner's users.
 * The portal reads a session when a request begins; a user removed while their key issue or webhook secret
 * rotation was on its way still got the new key or secret shown, and the trail named a user who was gone (a
 * known doubt of the seventeenth session). Every such change records its audit row in its own transaction, so
 * the row's insert is where the check holds for all of them: it reads the user FOR KEY SHARE, which waits for
 * a removal in flight and keeps one from landing until the change commits, and raises check_violation
 * `audit_events_actor_present` when the user is gone; the change then rolls back with it. A password change
 * updates no key column, so it does not wait on it; invites, removals and role changes lock the partner's
 * users FOR UPDATE and so wait for the audited changes in flight. The audit module reads another module's
 * table here, as a database rule of the trail (like its append-only trigger), not through a repository.
 */
export class AuditActorPresent1764000402800 implements MigrationInterface {
  name = 'AuditActorPresent1764000402800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION audit_events_actor_present() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM portal_users u WHERE u.id = NEW.actor_id AND u.partner_id = NEW.partner_id FOR KEY SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'portal user % is no longer a user of partner %', NEW.actor_id, NEW.partner_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'audit_events_actor_present';
        END IF;
        RETURN NEW;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER audit_events_actor_present BEFORE INSERT ON audit_events
        FOR EACH ROW WHEN (NEW.actor_kind = 'portal_user') EXECUTE FUNCTION audit_events_actor_present()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER audit_events_actor_present ON audit_events`);
    await q.query(`DROP FUNCTION audit_events_actor_present()`);
  }
}
