import { MigrationInterface, QueryRunner } from 'typeorm';

/** The "holds" lock in shared mode, for the merchant of the row being inserted. */
const SHARED_HOLDS_LOCK = `PERFORM pg_advisory_xact_lock_shared(hashtext('merchants.holds'), hashtext(NEW.merchant_id::text));`;

/** payment_requests_merchant_holds, with the shared lock first (up) or without it (down: 1764000001000's). */
const requestHolds = (lock: string) => `
      CREATE OR REPLACE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${lock}
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
      $$`;

/** plans_merchant_currency_holds, with the shared lock first (up) or without it (down: 1764000400400's). */
const planHolds = (lock: string) => `
      CREATE OR REPLACE FUNCTION plans_merchant_currency_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${lock}
        PERFORM 1 FROM merchants m WHERE m.id = NEW.merchant_id AND m.display_currency = NEW.fiat_currency FOR SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'merchant % does not charge in %', NEW.merchant_id, NEW.fiat_currency
            USING ERRCODE = 'check_violation', CONSTRAINT = 'plans_merchant_currency_holds';
        END IF;
        RETURN NEW;
      END
      $$`;

/**
 * A request insert and a change of its merchant (disable, enable, wallet, onboarding, currency) end one way or
 * the other. With a plain read in payment_requests_merchant_holds, a create's insert could check the merchant,
 * then wait on another transaction's row with the same idempotency key (ON CONFLICT), and land after a disable
 * that had already answered: a request for a disabled merchant (a helper's hunt, 2026-11-27).
 *
 * The insert now holds the merchant's "holds" advisory lock in shared mode (key: hashtext('merchants.holds'),
 * hashtext(merchant id)) until its transaction ends, and every such change takes it exclusively first
 * (MerchantDirectory.change): a change waits for the inserts in flight, and inserts that come after wait for the
 * change and then read the merchant as changed. An advisory lock, not the merchant row read FOR SHARE: row
 * share locks let new share lockers pass an update that waits, so a steady flow of creates could hold off a
 * disable for as long as it lasts; the lock manager queues a new shared request behind a waiting exclusive one.
 * plans_merchant_currency_holds takes the same shared lock before its FOR SHARE of the merchant row, so a
 * plan's insert and a currency change take the two locks in one order (advisory, then row).
 */
export class MerchantHoldsLock1764000402500 implements MigrationInterface {
  name = 'MerchantHoldsLock1764000402500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(requestHolds(SHARED_HOLDS_LOCK));
    await q.query(planHolds(SHARED_HOLDS_LOCK));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(requestHolds(''));
    await q.query(planHolds(''));
  }
}
