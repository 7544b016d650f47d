import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * payment_requests_merchant_holds reads the merchant FOR SHARE (as plans_merchant_currency_holds does), so a
 * create and a change of its merchant (disable, wallet, currency, onboarding) end one way or the other.
 *
 * With a plain read, a create's insert could check the merchant, then wait on another transaction's row with
 * the same idempotency key (ON CONFLICT), and land after a disable that did not wait for it: the disable
 * answered 200 and the request was created for a disabled merchant (a helper's hunt, 2026-11-27). Now the
 * merchant's change waits for the create's transaction, or the create's read waits for the change and reads
 * the merchant as changed. The lock costs a create no more than the foreign key's own KEY SHARE lock on the
 * same row, which it now already holds.
 */
export class MerchantHoldsLock1764000402500 implements MigrationInterface {
  name = 'MerchantHoldsLock1764000402500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM merchants m
         WHERE m.id = NEW.merchant_id AND m.partner_id = NEW.partner_id AND m.test_mode = NEW.test_mode
           AND NOT m.disabled AND m.onboarding_status = 'complete'
           AND m.wallet_address = NEW.recipient AND m.display_currency = NEW.fiat_currency
           FOR SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'merchant % does not accept this request as priced', NEW.merchant_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_requests_merchant_holds';
        END IF;
        RETURN NEW;
      END
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (
          SELECT 1 FROM merchants m
           WHERE m.id = NEW.merchant_id AND m.partner_id = NEW.partner_id AND m.test_mode = NEW.test_mode
             AND NOT m.disabled AND m.onboarding_status = 'complete'
             AND m.wallet_address = NEW.recipient AND m.display_currency = NEW.fiat_currency) THEN
          RAISE EXCEPTION 'merchant % does not accept this request as priced', NEW.merchant_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_requests_merchant_holds';
        END IF;
        RETURN NEW;
      END
      $$`);
  }
}
