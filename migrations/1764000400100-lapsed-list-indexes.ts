import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * status=expired without reading other partners' lapsed rows (issue 14). A lapsed request (requested or opened,
 * no proof past expires_at, or an attached proof past claim_until) reads as expired until the sweep stores it
 * so. The list finds a partner's lapsed rows through payment_requests_expiring / payment_requests_attached_expiring
 * (the only indexes that know the deadlines, so the planner cannot trade them for a walk of the live rows), which
 * held the deadline alone: every status=expired page fetched the heap row of every lapsed request of the table to
 * learn its partner and status. With partner_id, status and id in the key the list reads its own lapsed ids from
 * the index alone (measured in the README's Lists section); the sweep still ranges over the deadline first. No
 * test_mode, on purpose: see stateBranches in the requests repository.
 */
export class LapsedListIndexes1764000400100 implements MigrationInterface {
  name = 'LapsedListIndexes1764000400100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payment_requests_expiring`);
    await q.query(`
      CREATE INDEX payment_requests_expiring ON payment_requests (expires_at, partner_id, status, id)
        WHERE status IN ('requested', 'opened') AND proof_status = 'none'`);
    await q.query(`DROP INDEX payment_requests_attached_expiring`);
    await q.query(`
      CREATE INDEX payment_requests_attached_expiring ON payment_requests (claim_until, partner_id, status, id)
        WHERE status IN ('requested', 'opened') AND proof_status = 'attached'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payment_requests_attached_expiring`);
    await q.query(`
      CREATE INDEX payment_requests_attached_expiring ON payment_requests (claim_until)
        WHERE status IN ('requested', 'opened') AND proof_status = 'attached'`);
    await q.query(`DROP INDEX payment_requests_expiring`);
    await q.query(`
      CREATE INDEX payment_requests_expiring ON payment_requests (expires_at)
        WHERE status IN ('requested', 'opened') AND proof_status = 'none'`);
  }
}
