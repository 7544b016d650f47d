import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A deliveries page (the portal's, the admin list by partner or merged across partners) reads each partner's
 * newest events of each state, ordered by (recorded_at, id). With webhook_events_partner ending at recorded_at,
 * each read needed a sort for the id, and Postgres costed it on its estimate of the rows in that state: taking
 * the state as a value it cannot see (as the list must, see WebhookEventsRepository.newestPage), it sorted the
 * partner's whole state where the estimate was small (3,000 events read for a page of 50 in CI, 2026-11-27).
 * With id in the key the index holds the list's order, and a page is read in it, LIMIT rows each.
 */
export class WebhookPartnerIndexId1764000401800 implements MigrationInterface {
  name = 'WebhookPartnerIndexId1764000401800';
  /**
   * Outside a transaction, so the index is built CONCURRENTLY beside the one it replaces (a plain build would
   * block every event recorded and every delivery for its duration). Safe to run again after a failure at any
   * step. TypeORM's revert ignores this flag: revert it with `--transaction none`.
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await replaceIndex(q, '(partner_id, state, recorded_at, id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await replaceIndex(q, '(partner_id, state, recorded_at)');
  }
}

async function replaceIndex(q: QueryRunner, definition: string): Promise<void> {
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_partner_next`);
  await q.query(`CREATE INDEX CONCURRENTLY webhook_events_partner_next ON webhook_events ${definition}`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_events_partner`);
  await q.query(`ALTER INDEX webhook_events_partner_next RENAME TO webhook_events_partner`);
}
