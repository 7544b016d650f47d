import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partner portal users and their sessions. Emails are stored lower-cased, so the unique constraint is
 * case-insensitive without citext. A session row is keyed by the SHA-256 of the cookie's token: the
 * database alone never holds a usable cookie. Sessions live in Postgres so that any instance serves them.
 */
export class Portal1764000000002 implements MigrationInterface {
  name = 'Portal1764000000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE portal_users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        partner_id uuid NOT NULL REFERENCES partners(id),
        email text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
        password_hash text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX portal_users_partner ON portal_users (partner_id)`);
    await q.query(`
      CREATE TABLE portal_sessions (
        id bytea PRIMARY KEY CHECK (octet_length(id) = 32),
        user_id uuid NOT NULL REFERENCES portal_users(id) ON DELETE CASCADE,
        csrf_token text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        expires_at timestamptz(3) NOT NULL,
        last_seen_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX portal_sessions_user ON portal_sessions (user_id)`);
    await q.query(`CREATE INDEX portal_sessions_expiry ON portal_sessions (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE portal_sessions`);
    await q.query(`DROP TABLE portal_users`);
  }
}
