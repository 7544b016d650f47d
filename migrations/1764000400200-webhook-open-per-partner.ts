import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox re-drive takes each partner's oldest overdue deliveries in turn (issue 14). With the open
 * deliveries indexed by due time alone it ranked every overdue event of the table to find 1000: at 1,000,000
 * waiting in the partners' gates (an incident's backlog) a seq scan and an on-disk sort, about 4 s every 15 s.
 * With partner_id first the re-drive walks the partners that have open deliveries and reads only each one's
 * oldest (measured in docs/performance.md, "Webhook re-drive"). The same rows as before, so no write costs more.
 */
export class WebhookOpenPerPartner1764000400200 implements MigrationInterface {
  name = 'WebhookOpenPerPartner1764000400200';
  /**
   * Outside a transaction, so the index is built CONCURRENTLY beside the one it replaces: a plain DROP INDEX
   * takes an ACCESS EXCLUSIVE lock on webhook_events, and every event recorded (in the transaction of a payment's
   * state change), claimed or recorded as an attempt would wait for the build. Safe to run again after a failure
   * at any step (an interrupted concurrent build leaves an invalid index, dropped first). TypeORM's revert
   * ignores this flag: revert it with `--transaction none` (typeorm migration:revert).
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await replaceIndex(q, 'webhook_events_open', `(partner_id, next_attempt_at) WHERE state IN ('pending','delivering')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await replaceIndex(q, 'webhook_events_open', `(next_attempt_at) WHERE state IN ('pending','delivering')`);
  }
}

/** Builds `name` anew on webhook_events with `definition` (columns and predicate), never locking the table's reads or writes. */
async function replaceIndex(q: QueryRunner, name: string, definition: string): Promise<void> {
  const next = `${name}_next`;
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${next}`);
  await q.query(`CREATE INDEX CONCURRENTLY ${next} ON webhook_events ${definition}`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await q.query(`ALTER INDEX ${next} RENAME TO ${name}`);
}
