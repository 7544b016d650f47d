import { MigrationInterface, QueryRunner } from 'typeorm';

const BEFORE = `'partner.created', 'partner.updated', 'key.issued', 'key.revoked', 'merchant.disabled', 'merchant.enabled',
  'webhook.updated', 'webhook.secret_rotated', 'webhook.rotation_confirmed', 'delivery.redelivered',
  'rates.refreshed', 'portal_user.added', 'portal_user.removed', 'portal_user.role_changed',
  'portal_user.password_changed'`;

/**
 * Two more audited actions: a portal user's sign-in (`portal_user.signed_in`, with the session it opened) and
 * an operator's action on the queue board (`queue_board.action`: a retry, a clean, a job added or removed).
 * The check is replaced in the migration's transaction; audit_events is append-only, and the new check is
 * a superset of the old one, so every row already stored passes it. Down cannot delete the new rows (the
 * table refuses DELETE): it fails while such rows exist, rather than be marked reverted with the check wide.
 */
export class AuditSignInsBoard1764000402100 implements MigrationInterface {
  name = 'AuditSignInsBoard1764000402100';

  async up(q: QueryRunner): Promise<void> {
    await replaceCheck(q, `${BEFORE}, 'portal_user.signed_in', 'queue_board.action'`);
  }

  async down(q: QueryRunner): Promise<void> {
    const [{ n }] = await q.query(`SELECT count(*)::int AS n FROM audit_events WHERE action IN ('portal_user.signed_in', 'queue_board.action')`);
    if (n > 0) {
      // The trail is append-only: its sign-in and board rows stay, and so must the check that allows them.
      throw new Error(`audit_events holds ${n} sign-in and queue board rows (append-only): this migration cannot be reverted`);
    }
    await replaceCheck(q, BEFORE);
  }
}

async function replaceCheck(q: QueryRunner, actions: string): Promise<void> {
  await q.query(`ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check`);
  await q.query(`ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN (${actions}))`);
}
