import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * webhook_events_unrelayed (recorded_at) WHERE state = 'pending' served the outbox re-drive's scan for events
 * never relayed. Since 1764000400200 the re-drive finds them per partner on webhook_events_open
 * (next_attempt_at IS NULL), and no query reads this index; every event recorded and every retry still
 * wrote it. Dropped CONCURRENTLY (a plain DROP INDEX would lock webhook_events while payments record events).
 */
export class DropWebhookUnrelayed1764000400300 implements MigrationInterface {
  name = 'DropWebhookUnrelayed1764000400300';
  /** CONCURRENTLY cannot run in a transaction. TypeORM's revert ignores this: revert with `--transaction none`. */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_unrelayed`);
  }

  async down(q: QueryRunner): Promise<void> {
    // An interrupted concurrent build leaves an invalid index: drop it before building again.
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_unrelayed`);
    await q.query(`CREATE INDEX CONCURRENTLY webhook_events_unrelayed ON webhook_events (recorded_at) WHERE state = 'pending'`);
  }
}
