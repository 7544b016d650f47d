import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The merchant dashboard (DESIGN §5). Sign-in nonces are kept server-side, single use, for 10 minutes.
 * Sessions are keyed by the SHA-256 of the cookie's token, as the portal's are, so the database alone never
 * holds a usable cookie. Handles (owned by the merchants module) are never reissued: a retired handle keeps
 * its row, so the primary key on the handle is what refuses it to everyone else; one current handle per
 * merchant.
 */
export class Dashboard1764000200001 implements MigrationInterface {
  name = 'Dashboard1764000200001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE dashboard_nonces (
        nonce text PRIMARY KEY,
        expires_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX dashboard_nonces_expiry ON dashboard_nonces (expires_at)`);
    await q.query(`
      CREATE TABLE dashboard_sessions (
        id bytea PRIMARY KEY CHECK (octet_length(id) = 32),
        merchant_id uuid NOT NULL REFERENCES merchants(id) ON DELETE CASCADE,
        csrf_token text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        expires_at timestamptz(3) NOT NULL,
        last_seen_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX dashboard_sessions_merchant ON dashboard_sessions (merchant_id)`);
    await q.query(`CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at)`);
    await q.query(`
      CREATE TABLE merchant_handles (
        handle text PRIMARY KEY CHECK (handle ~ '^[a-z][a-z0-9-]{1,18}[a-z0-9]$' AND position('--' in handle) = 0),
        merchant_id uuid NOT NULL REFERENCES merchants(id),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        retired_at timestamptz(3)
      )`);
    await q.query(`CREATE UNIQUE INDEX merchant_handles_current ON merchant_handles (merchant_id) WHERE retired_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE merchant_handles`);
    await q.query(`DROP TABLE dashboard_sessions`);
    await q.query(`DROP TABLE dashboard_nonces`);
  }
}
