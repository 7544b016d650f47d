import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Onboarding links expire ONBOARDING_LINK_TTL_HOURS after they were issued (issue 10 point 4). Existing
 * links count from this migration. A read of the merchant after expiry issues a new token; the hash of the
 * one it replaced is kept, so the old link's page can still say "expired" instead of "unknown".
 */
export class OnboardingLinkExpiry1764000004100 implements MigrationInterface {
  name = 'OnboardingLinkExpiry1764000004100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE merchants
        ADD COLUMN onboarding_link_issued_at timestamptz(3) NOT NULL DEFAULT now(),
        ADD COLUMN onboarding_previous_token_hash bytea`);
    await q.query(`CREATE INDEX merchants_onboarding_previous_token ON merchants (onboarding_previous_token_hash)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX merchants_onboarding_previous_token`);
    await q.query(`ALTER TABLE merchants DROP COLUMN onboarding_previous_token_hash, DROP COLUMN onboarding_link_issued_at`);
  }
}
