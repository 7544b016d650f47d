import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * payment_requests_merchant_holds: the shared "holds" lock, the merchant check, the key check (up only), then
 * the row's created_at (1764000402900's). The key check is written as the function's text at this version.
 */
const requestHolds = (keyCheck: string) => `
      CREATE OR REPLACE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE stamp timestamptz;
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(hashtext('merchants.holds'), hashtext(NEW.merchant_id::text));
        IF NOT EXISTS (
          SELECT 1 FROM merchants m
           WHERE m.id = NEW.merchant_id AND m.partner_id = NEW.partner_id AND m.test_mode = NEW.test_mode
             AND NOT m.disabled AND m.onboarding_status = 'complete'
             AND m.wallet_address = NEW.recipient AND m.display_currency = NEW.fiat_currency) THEN
          RAISE EXCEPTION 'merchant % does not accept this request as priced', NEW.merchant_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_requests_merchant_holds';
        END IF;
        ${keyCheck}
        stamp := date_trunc('milliseconds', clock_timestamp());
        IF NEW.created_at = now()::timestamptz(3) AND stamp > NEW.created_at THEN
          NEW.expires_at := NEW.expires_at + (stamp - NEW.created_at);
          NEW.claim_until := NEW.claim_until + (stamp - NEW.created_at);
          NEW.created_at := stamp;
        END IF;
        RETURN NEW;
      END
      $$`;

const KEY_CHECK = `
        IF NEW.api_key_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.id = NEW.api_key_id AND k.revoked_at IS NULL) THEN
          RAISE EXCEPTION 'api key % is revoked', NEW.api_key_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_requests_key_live';
        END IF;`;

/**
 * A request a partner's API key creates records that key (`api_key_id`; null for dashboard, handle and plan
 * creates), and its insert commits only while the key is not revoked. The guard checks the key when the call
 * arrives, from a cache that a revocation empties on every instance before it answers; but a create that
 * passed the guard and then waited (for a pool connection behind slow queries, a helper's hunt: up to 2.5 s)
 * still inserted after the revocation had answered. The check reads the key row as the insert runs (a
 * trigger's statement sees what has committed by then), so what is left is the race any write has with a
 * revocation committing while it runs. Not a foreign key: that would lock the key row for every create.
 * Adding a nullable column without a default rewrites nothing.
 */
export class RequestKeyLive1764000403100 implements MigrationInterface {
  name = 'RequestKeyLive1764000403100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payment_requests ADD COLUMN api_key_id uuid`);
    await q.query(requestHolds(KEY_CHECK));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(requestHolds(''));
    await q.query(`ALTER TABLE payment_requests DROP COLUMN api_key_id`);
  }
}
