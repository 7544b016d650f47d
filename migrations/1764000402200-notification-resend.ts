import { MigrationInterface, QueryRunner } from 'typeorm';

const BEFORE = `'partner.created', 'partner.updated', 'key.issued', 'key.revoked', 'merchant.disabled', 'merchant.enabled',
  'webhook.updated', 'webhook.secret_rotated', 'webhook.rotation_confirmed', 'delivery.redelivered',
  'rates.refreshed', 'portal_user.added', 'portal_user.removed', 'portal_user.role_changed',
  'portal_user.password_changed', 'portal_user.signed_in', 'queue_board.action'`;

/**
 * An operator can send a notification that did not go out (failed, abandoned) again:
 * `notifications.resent_at` is when, and the retry schedule's 24 hours count from it rather than from the
 * message's creation. The resend is audited as `notification.resent`. The check is replaced in the
 * migration's transaction (a superset: every stored row passes). Down fails while resend rows exist in the
 * append-only trail, like 1764000402100's.
 */
export class NotificationResend1764000402200 implements MigrationInterface {
  name = 'NotificationResend1764000402200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE notifications ADD COLUMN resent_at timestamp(3) with time zone`);
    await replaceCheck(q, `${BEFORE}, 'notification.resent'`);
  }

  async down(q: QueryRunner): Promise<void> {
    const [{ n }] = await q.query(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'notification.resent'`);
    if (n > 0) throw new Error(`audit_events holds ${n} notification.resent rows (append-only): this migration cannot be reverted`);
    await replaceCheck(q, BEFORE);
    await q.query(`ALTER TABLE notifications DROP COLUMN resent_at`);
  }
}

async function replaceCheck(q: QueryRunner, actions: string): Promise<void> {
  await q.query(`ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check`);
  await q.query(`ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN (${actions}))`);
}
