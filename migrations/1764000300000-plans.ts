import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Recurring plans (DESIGN §5), owned by the plans module. A plan is one payer's schedule; each charge is an
 * ordinary payment request naming its plan and period (payment_requests.plan_id, period_index, and the unique
 * payment_requests_plan_period index from the request-source migration), now tied to its plan by a foreign key.
 *
 * The scheduler selects by state: active plans whose next_charge_at has come (plans_due), locked FOR UPDATE
 * SKIP LOCKED. next_period_index is the period next_charge_at belongs to; next_charge_at is set exactly while
 * the plan is active. missed_in_row counts charges that expired unpaid since the last paid one (or resume).
 * `token` is the payer page's capability (plan_url), 32 random bytes in base64url.
 */
export class Plans1764000300000 implements MigrationInterface {
  name = 'Plans1764000300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE plans (
        id uuid PRIMARY KEY,
        partner_id uuid NOT NULL REFERENCES partners(id),
        merchant_id uuid NOT NULL REFERENCES merchants(id),
        test_mode boolean NOT NULL,
        token text NOT NULL CONSTRAINT plans_token UNIQUE,
        title text NOT NULL CONSTRAINT plans_title_check CHECK (char_length(title) >= 1 AND char_length(title) <= 120),
        fiat_amount integer NOT NULL CONSTRAINT plans_fiat_amount_check CHECK (fiat_amount > 0),
        fiat_currency text NOT NULL,
        "interval" text NOT NULL CONSTRAINT plans_interval_check CHECK ("interval" IN ('day','week','month','year')),
        interval_count integer NOT NULL CONSTRAINT plans_interval_count_check CHECK (interval_count >= 1 AND interval_count <= 12),
        start_at timestamptz(3) NOT NULL,
        max_charges integer CONSTRAINT plans_max_charges_check CHECK (max_charges >= 1),
        expiry_minutes integer NOT NULL CONSTRAINT plans_expiry_minutes_check CHECK (expiry_minutes > 0),
        payer_name text,
        payer_email text,
        metadata jsonb NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'active' CONSTRAINT plans_status_check CHECK (status IN ('active','paused','canceled','completed')),
        pause_reason text CONSTRAINT plans_pause_reason_value_check CHECK (pause_reason IN ('merchant','unpaid')),
        next_period_index integer NOT NULL DEFAULT 0 CONSTRAINT plans_next_period_index_check CHECK (next_period_index >= 0),
        next_charge_at timestamptz(3),
        charges_created integer NOT NULL DEFAULT 0 CONSTRAINT plans_charges_created_check CHECK (charges_created >= 0),
        missed_in_row integer NOT NULL DEFAULT 0 CONSTRAINT plans_missed_in_row_check CHECK (missed_in_row >= 0),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        CONSTRAINT plans_next_charge_check CHECK ((status = 'active') = (next_charge_at IS NOT NULL)),
        CONSTRAINT plans_pause_reason_check CHECK ((status = 'paused') = (pause_reason IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX plans_due ON plans (next_charge_at) WHERE status = 'active'`);
    await q.query(`CREATE INDEX plans_merchant_list ON plans (merchant_id, created_at, id)`);
    await q.query(`
      ALTER TABLE payment_requests ADD CONSTRAINT payment_requests_plan_id_fkey FOREIGN KEY (plan_id) REFERENCES plans(id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payment_requests DROP CONSTRAINT payment_requests_plan_id_fkey`);
    await q.query(`DROP TABLE plans`);
  }
}
