import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A plan charges in its own currency (the plan object shows `fiat_currency`), and a charge is a request, which
 * is always in its merchant's currency (payment_requests_merchant_holds). So while a merchant has a plan that
 * can still charge (active or paused), its currency may not change: before, a merchant that moved from usd to
 * jpy had its $10.00 plans charge ¥1000 (about $6.67), and inr to jpy charged 55 times too much.
 *
 * - merchants_currency_keeps_plans: a change of a merchant's display_currency is refused while it has such a
 *   plan in another currency.
 * - plans_merchant_currency_holds: a plan is inserted only in its merchant's currency as it stands, read with
 *   FOR SHARE, so a plan create and a currency change that race end one way or the other, never both: the
 *   change waits for the plan's commit and then sees it, or the plan's insert waits for the change's commit
 *   and then sees the new currency.
 *
 * Both raise check_violation naming their rule, which the merchants and plans modules turn into 409s. Plans
 * already out of step with their merchant are left as they are; their charges are refused (the charge asserts
 * the plan's currency) and logged.
 */
export class PlanCurrencyHolds1764000400400 implements MigrationInterface {
  name = 'PlanCurrencyHolds1764000400400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION merchants_currency_keeps_plans() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM plans p WHERE p.merchant_id = NEW.id AND p.status IN ('active','paused')
                      AND p.fiat_currency <> NEW.display_currency) THEN
          RAISE EXCEPTION 'merchant % has plans that charge in %', NEW.id, OLD.display_currency
            USING ERRCODE = 'check_violation', CONSTRAINT = 'merchants_currency_keeps_plans';
        END IF;
        RETURN NEW;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER merchants_currency_keeps_plans BEFORE UPDATE OF display_currency ON merchants
        FOR EACH ROW WHEN (OLD.display_currency IS DISTINCT FROM NEW.display_currency)
        EXECUTE FUNCTION merchants_currency_keeps_plans()`);
    await q.query(`
      CREATE FUNCTION plans_merchant_currency_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1 FROM merchants m WHERE m.id = NEW.merchant_id AND m.display_currency = NEW.fiat_currency FOR SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'merchant % does not charge in %', NEW.merchant_id, NEW.fiat_currency
            USING ERRCODE = 'check_violation', CONSTRAINT = 'plans_merchant_currency_holds';
        END IF;
        RETURN NEW;
      END
      $$`);
    await q.query(`
      CREATE TRIGGER plans_merchant_currency_holds BEFORE INSERT ON plans
        FOR EACH ROW EXECUTE FUNCTION plans_merchant_currency_holds()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER plans_merchant_currency_holds ON plans`);
    await q.query(`DROP FUNCTION plans_merchant_currency_holds()`);
    await q.query(`DROP TRIGGER merchants_currency_keeps_plans ON merchants`);
    await q.query(`DROP FUNCTION merchants_currency_keeps_plans()`);
  }
}
