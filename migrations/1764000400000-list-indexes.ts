import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lists that stay flat with the table (issue 14): every status / proof_status filter of spec §4.3 and every
 * source filter of the dashboard reads one index range per (status, proof_status) pair, in list order
 * (created_at, id), so a page reads about the rows it returns whatever the table's size. The repository's
 * list query merges those ranges (UNION ALL of ordered branches); "lapsed reads as expired" (DESIGN §3) is a
 * deadline condition on the requested/opened branches, and its lapsed-only branches read the existing
 * payment_requests_expiring / payment_requests_attached_expiring indexes. The planner needs the joint
 * distribution of status, proof_status and source to pick those ranges (independently estimated, a pair that
 * holds no row, such as expired/verified, looked like 20 % of the table and was read through the partner's
 * whole list index): hence the multivariate statistics.
 */
export class ListIndexes1764000400000 implements MigrationInterface {
  name = 'ListIndexes1764000400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX payment_requests_state_list ON payment_requests (partner_id, test_mode, status, proof_status, created_at, id)`);
    await q.query(`
      CREATE INDEX payment_requests_merchant_state_list ON payment_requests (merchant_id, status, proof_status, created_at, id)`);
    await q.query(`
      CREATE INDEX payment_requests_merchant_source_list
        ON payment_requests (merchant_id, source, status, proof_status, created_at, id)`);
    await q.query(`CREATE STATISTICS payment_requests_state_stats (mcv) ON status, proof_status, source FROM payment_requests`);
    await q.query(`ANALYZE payment_requests`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP STATISTICS payment_requests_state_stats`);
    await q.query(`DROP INDEX payment_requests_merchant_source_list`);
    await q.query(`DROP INDEX payment_requests_merchant_state_list`);
    await q.query(`DROP INDEX payment_requests_state_list`);
  }
}
