import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * webhook_events_unrelayed (recorded_at) WHERE state = 'pending' served the outbox re-drive before it walked
 * webhook_events_open per partner (1764000400200); since then only the admin list of pending deliveries across
 * partners (`GET /admin/api/deliveries?status=pending`) read it, yet every event recorded to be delivered (and
 * every retry back to pending) wrote an entry in it. Worse, Postgres picked it for a partner's pending
 * deliveries ordered by time, reading every partner's pending events to find one partner's (the portal's
 * deliveries page, 2026-11-27). Without it that admin list reads the open events through webhook_events_open
 * and sorts them: 5.4 ms at 5,400 open, and the whole backlog during an outage; an operator's page, not a
 * write on every event. Dropped CONCURRENTLY, so recording events never waits on it.
 * Revert with `--transaction none`.
 */
export class DropWebhookUnrelayed1764000401700 implements MigrationInterface {
  name = 'DropWebhookUnrelayed1764000401700';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_unrelayed`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_unrelayed`);
    await q.query(`CREATE INDEX CONCURRENTLY webhook_events_unrelayed ON webhook_events (recorded_at) WHERE state = 'pending'`);
  }
}
