import { MigrationInterface, QueryRunner } from 'typeorm';

/** The outbox re-drive looks for open deliveries every 15 s: keep that an index scan as the table grows. */
export class WebhookOpenIndex1764000000003 implements MigrationInterface {
  name = 'WebhookOpenIndex1764000000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX webhook_events_open ON webhook_events (next_attempt_at) WHERE state IN ('pending','delivering')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_events_open`);
  }
}
