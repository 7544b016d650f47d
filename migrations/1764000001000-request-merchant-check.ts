import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A payment request can only be inserted for a merchant that, at that moment, belongs to the request's partner
 * and mode, is enabled and onboarded, and still has the wallet and currency the request was priced for.
 *
 * Create reads the merchant from an in-process cache (a round trip saved on the hottest path); this rule makes
 * a stale entry harmless, for every path that inserts requests, the way a foreign key would. It is schema,
 * reviewed here, so no module's SQL has to read another module's table. A violation is a check_violation
 * naming the rule, which the requests repository recognises.
 */
export class RequestMerchantCheck1764000001000 implements MigrationInterface {
  name = 'RequestMerchantCheck1764000001000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
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
    await q.query(`
      CREATE TRIGGER payment_requests_merchant_holds BEFORE INSERT ON payment_requests
        FOR EACH ROW EXECUTE FUNCTION payment_requests_merchant_holds()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER payment_requests_merchant_holds ON payment_requests`);
    await q.query(`DROP FUNCTION payment_requests_merchant_holds()`);
  }
}
