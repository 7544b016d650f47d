import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Portal users get a role (issue 10 point 10): `admin` manages the partner's users, `member` does not.
 * Every existing user was created by an operator as the partner's account holder, so they become admins.
 * No default afterwards: whoever creates a user says which role it has.
 */
export class PortalUserRoles1764000004101 implements MigrationInterface {
  name = 'PortalUserRoles1764000004101';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE portal_users ADD COLUMN role text NOT NULL DEFAULT 'admin'
        CONSTRAINT portal_users_role_check CHECK (role IN ('admin','member'))`);
    await q.query(`ALTER TABLE portal_users ALTER COLUMN role DROP DEFAULT`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE portal_users DROP COLUMN role`);
  }
}
