import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * status=expired without reading other partners' lapsed rows (issue 14). A lapsed request (requested or opened,
 * no proof past expires_at, or an attached proof past claim_until) reads as expired until the sweep stores it
 * so. The list finds a partner's lapsed rows through payment_requests_expiring / payment_requests_attached_expiring
 * (the only indexes that know the deadlines, so the planner cannot trade them for a walk of the live rows), which
 * held the deadline alone: every status=expired page fetched the heap row of every lapsed request of the table to
 * learn its partner and status. With partner_id, status and id in the key the list reads its own lapsed ids from
 * the index alone (measured in docs/performance.md, "Lists"); the sweep still ranges over the deadline first. No
 * test_mode, on purpose: see stateBranches in the requests repository.
 */
export class LapsedListIndexes1764000400100 implements MigrationInterface {
  name = 'LapsedListIndexes1764000400100';
  /**
   * Outside a transaction, so each index is built CONCURRENTLY beside the one it replaces: a plain DROP INDEX
   * takes an ACCESS EXCLUSIVE lock on payment_requests, held in a transaction until both builds ended, and every
   * read and write of the table (create, get, list, the pay page, the sweep) would wait for them. Safe to run
   * again after a failure at any step (an interrupted concurrent build leaves an invalid index, dropped first).
   * TypeORM's revert ignores this flag: revert it with `--transaction none` (typeorm migration:revert).
   */
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await replaceIndex(q, 'payment_requests_expiring', `(expires_at, partner_id, status, id)
      WHERE status IN ('requested', 'opened') AND proof_status = 'none'`);
    await replaceIndex(q, 'payment_requests_attached_expiring', `(claim_until, partner_id, status, id)
      WHERE status IN ('requested', 'opened') AND proof_status = 'attached'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await replaceIndex(q, 'payment_requests_attached_expiring', `(claim_until)
      WHERE status IN ('requested', 'opened') AND proof_status = 'attached'`);
    await replaceIndex(q, 'payment_requests_expiring', `(expires_at)
      WHERE status IN ('requested', 'opened') AND proof_status = 'none'`);
  }
}

/** Builds `name` anew on payment_requests with `definition` (columns and predicate), never locking the table's reads or writes. */
async function replaceIndex(q: QueryRunner, name: string, definition: string): Promise<void> {
  const next = `${name}_next`;
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${next}`);
  await q.query(`CREATE INDEX CONCURRENTLY ${next} ON payment_requests ${definition}`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await q.query(`ALTER INDEX ${next} RENAME TO ${name}`);
}
