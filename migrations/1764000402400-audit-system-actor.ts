import { MigrationInterface, QueryRunner } from 'typeorm';

const BEFORE = `(actor_kind = 'admin' AND actor_id IS NULL) OR (actor_kind = 'portal_user' AND actor_id IS NOT NULL AND partner_id IS NOT NULL)`;

/**
 * A third actor in the audit trail: the service itself (`system`, no actor id), for a change that a rule
 * makes to a partner's data on someone else's act. The first: a live merchant's wallet proof takes the wallet
 * off a test merchant that only named it (`merchant.wallet_released`). The check is replaced
 * in the migration's transaction (a superset). Down fails while such rows exist (append-only trail).
 */
export class AuditSystemActor1764000402400 implements MigrationInterface {
  name = 'AuditSystemActor1764000402400';

  async up(q: QueryRunner): Promise<void> {
    await replaceCheck(q, `${BEFORE} OR (actor_kind = 'system' AND actor_id IS NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const [{ n }] = await q.query(`SELECT count(*)::int AS n FROM audit_events WHERE actor_kind = 'system'`);
    if (n > 0) throw new Error(`audit_events holds ${n} rows by the system actor (append-only): this migration cannot be reverted`);
    await replaceCheck(q, BEFORE);
  }
}

async function replaceCheck(q: QueryRunner, rule: string): Promise<void> {
  await q.query(`ALTER TABLE audit_events DROP CONSTRAINT audit_events_actor_check`);
  await q.query(`ALTER TABLE audit_events ADD CONSTRAINT audit_events_actor_check CHECK (${rule})`);
}
