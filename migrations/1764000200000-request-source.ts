import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a payment request came from (DESIGN §5): the partner API, the merchant's dashboard, a recurring plan's
 * charge, or the public handle page. Plan charges name their plan and period; one request per (plan, period),
 * whatever the number of workers (the plans table, and its foreign key, come with the plans module).
 * Dashboard and handle requests carry no metadata at all (spec §6.3: `null`, not `{}`), so the column is
 * nullable; the partner API still stores `{}` when a partner sends none.
 */
export class RequestSource1764000200000 implements MigrationInterface {
  name = 'RequestSource1764000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE payment_requests
        ADD COLUMN source text NOT NULL DEFAULT 'partner'
          CONSTRAINT payment_requests_source_check CHECK (source IN ('partner','dashboard','plan','handle')),
        ADD COLUMN plan_id uuid,
        ADD COLUMN period_index integer,
        ALTER COLUMN metadata DROP NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX payment_requests_plan_period ON payment_requests (plan_id, period_index) WHERE plan_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payment_requests_plan_period`);
    await q.query(`UPDATE payment_requests SET metadata = '{}' WHERE metadata IS NULL`);
    await q.query(`
      ALTER TABLE payment_requests DROP COLUMN source, DROP COLUMN plan_id, DROP COLUMN period_index,
        ALTER COLUMN metadata SET NOT NULL`);
  }
}
