import { MigrationInterface, QueryRunner } from 'typeorm';

/** payment_requests_merchant_holds: the shared "holds" lock, the merchant check, then (up) the row's created_at. */
const requestHolds = (stamp: string) => `
      CREATE OR REPLACE FUNCTION payment_requests_merchant_holds() RETURNS trigger LANGUAGE plpgsql AS $$
      ${stamp ? 'DECLARE stamp timestamptz;' : ''}
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
        ${stamp}
        RETURN NEW;
      END
      $$`;

/**
 * The insert's time, to the millisecond (the column's precision; cut, not rounded, so never ahead of it), for
 * a created_at left to its default; expires_at and claim_until, computed from now() in the same statement, move
 * by as much, so the request's expiry and window keep their length to the millisecond.
 */
const STAMP_AT_INSERT = `
        stamp := date_trunc('milliseconds', clock_timestamp());
        IF NEW.created_at = now()::timestamptz(3) AND stamp > NEW.created_at THEN
          NEW.expires_at := NEW.expires_at + (stamp - NEW.created_at);
          NEW.claim_until := NEW.claim_until + (stamp - NEW.created_at);
          NEW.created_at := stamp;
        END IF;`;

/**
 * A request's created_at is the time of its insert, after the trigger's lock wait, not the start of its
 * transaction (DEFAULT now()). The `since` cursor of spec §4.3 must never pass a row that commits later: the
 * list reads only rows older than every transaction writing payment_requests now (RequestsRepository.list).
 * With created_at at its transaction's start, a transaction that began, waited (on a plan's lock, a merchant
 * change's "holds" lock, a racing create's amount) and inserted later had a created_at from before it held
 * any lock on the table, so no horizon could see it coming (a helper's hunt: a create queued behind a
 * merchant change committed behind a poller's cursor and was never listed). Now the insert holds the table's
 * RowExclusiveLock before its created_at is taken. A created_at given explicitly (seeds, imports) is kept: the
 * default reaches the trigger as now() at the column's precision (milliseconds), and only that is replaced.
 * Inserts that give expires_at or claim_until explicitly give created_at too (plans' charges do not: theirs
 * come from now() as well).
 */
export class RequestCreatedAtVisible1764000402900 implements MigrationInterface {
  name = 'RequestCreatedAtVisible1764000402900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(requestHolds(STAMP_AT_INSERT));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(requestHolds(''));
  }
}
