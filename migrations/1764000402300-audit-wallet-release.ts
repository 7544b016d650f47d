import { MigrationInterface, QueryRunner } from 'typeorm';

const BEFORE = `'partner.created', 'partner.updated', 'key.issued', 'key.revoked', 'merchant.disabled', 'merchant.enabled',
  'webhook.updated', 'webhook.secret_rotated', 'webhook.rotation_confirmed', 'delivery.redelivered',
  'rates.refreshed', 'portal_user.added', 'portal_user.removed', 'portal_user.role_changed',
  'portal_user.password_changed', 'portal_user.signed_in', 'queue_board.action', 'notification.resent'`;

/**
 * An operator can take a wallet off a merchant that only named it at create and never proved it
 * (`POST /admin/api/merchants/:id/release-wallet`), audited as `merchant.wallet_released`. The check is
 * replaced in the migration's transaction (a superset: every stored row passes). Down fails while such rows
 * exist in the append-only trail, like 1764000402100's.
 */
export class AuditWalletRelease1764000402300 implements MigrationInterface {
  name = 'AuditWalletRelease1764000402300';

  async up(q: QueryRunner): Promise<void> {
    await replaceCheck(q, `${BEFORE}, 'merchant.wallet_released'`);
  }

  async down(q: QueryRunner): Promise<void> {
    const [{ n }] = await q.query(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'merchant.wallet_released'`);
    if (n > 0) throw new Error(`audit_events holds ${n} merchant.wallet_released rows (append-only): this migration cannot be reverted`);
    await replaceCheck(q, BEFORE);
  }
}

async function replaceCheck(q: QueryRunner, actions: string): Promise<void> {
  await q.query(`ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check`);
  await q.query(`ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN (${actions}))`);
}
