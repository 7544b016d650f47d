import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The whole first schema, reviewed by hand. Timestamps are timestamptz(3): the API shows milliseconds, and a
 * `since` cursor built from a shown created_at must compare exactly. Money is numeric(78,0) (a uint256).
 */
export class InitialSchema1764000000000 implements MigrationInterface {
  name = 'InitialSchema1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE partners (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        slug text NOT NULL UNIQUE,
        name text NOT NULL,
        default_currency text NOT NULL,
        allowed_expiry_minutes integer[] NOT NULL,
        default_expiry_minutes integer NOT NULL,
        webhook_url text,
        webhook_enabled boolean NOT NULL DEFAULT false,
        webhook_enabled_at timestamptz(3),
        webhook_secret text,
        webhook_previous_secret text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        partner_id uuid NOT NULL REFERENCES partners(id),
        mode text NOT NULL CHECK (mode IN ('test','live')),
        scopes text[] NOT NULL,
        key_hash bytea NOT NULL UNIQUE,
        display_prefix text NOT NULL,
        label text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        revoked_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX api_keys_partner ON api_keys (partner_id)`);
    await q.query(`
      CREATE TABLE merchants (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        partner_id uuid NOT NULL REFERENCES partners(id),
        test_mode boolean NOT NULL,
        email text, display_name text, business_name text, country text, phone text,
        website text, instagram text, industry text,
        account_type text NOT NULL DEFAULT 'consumer' CHECK (account_type IN ('consumer','business')),
        display_currency text NOT NULL,
        wallet_address text UNIQUE CHECK (wallet_address ~ '^0x[0-9a-f]{40}$'),
        onboarding_status text NOT NULL DEFAULT 'incomplete' CHECK (onboarding_status IN ('incomplete','complete')),
        onboarding_token_salt bytea NOT NULL,
        onboarding_token_hash bytea NOT NULL UNIQUE,
        onboarding_nonce text,
        wallet_verified_at timestamptz(3),
        terms_version text,
        terms_accepted_at timestamptz(3),
        disabled boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX merchants_partner_list ON merchants (partner_id, test_mode, created_at, id)`);
    await q.query(`
      CREATE TABLE payment_requests (
        id uuid PRIMARY KEY,
        partner_id uuid NOT NULL REFERENCES partners(id),
        merchant_id uuid NOT NULL REFERENCES merchants(id),
        test_mode boolean NOT NULL,
        idempotency_key text NOT NULL,
        status text NOT NULL DEFAULT 'requested' CHECK (status IN ('requested','opened','expired','voided')),
        proof_status text NOT NULL DEFAULT 'none' CHECK (proof_status IN ('none','attached','verified')),
        fiat_amount integer NOT NULL CHECK (fiat_amount > 0),
        fiat_currency text NOT NULL,
        rate numeric NOT NULL,
        amount numeric(78,0) NOT NULL CHECK (amount > 0),
        chain_id numeric(78,0) NOT NULL,
        token_address text NOT NULL,
        recipient text NOT NULL,
        -- Holds the amount for this merchant and asset while a transfer may still pay the request;
        -- cleared on verification and by the sweep once the claim window has closed.
        amount_locked boolean NOT NULL DEFAULT true,
        memo text,
        payment_mode text NOT NULL CHECK (payment_mode IN ('pos','service')),
        customer_name text, customer_email text, customer_phone text,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        expires_at timestamptz(3) NOT NULL,
        claim_until timestamptz(3) NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        opened_at timestamptz(3),
        voided_at timestamptz(3),
        expired_at timestamptz(3),
        tx_hash text,
        proof_attached_at timestamptz(3),
        proof_source text,
        payer_address text,
        proof_verified_at timestamptz(3),
        claimed_log_index integer,
        verify_note text,
        CONSTRAINT payment_requests_idempotency UNIQUE (partner_id, merchant_id, idempotency_key)
      )`);
    await q.query(`
      CREATE UNIQUE INDEX payment_requests_open_amount ON payment_requests (merchant_id, chain_id, token_address, amount)
      WHERE amount_locked`);
    // One transfer (chain, tx, log) pays at most one request: two concurrent claims cannot both win.
    await q.query(`
      CREATE UNIQUE INDEX payment_requests_claim ON payment_requests (chain_id, tx_hash, claimed_log_index)
      WHERE claimed_log_index IS NOT NULL`);
    await q.query(`CREATE INDEX payment_requests_list ON payment_requests (partner_id, test_mode, created_at, id)`);
    await q.query(`CREATE INDEX payment_requests_merchant_list ON payment_requests (merchant_id, created_at, id)`);
    await q.query(`CREATE INDEX payment_requests_tx ON payment_requests (chain_id, tx_hash) WHERE tx_hash IS NOT NULL`);
    await q.query(`
      CREATE INDEX payment_requests_claimable ON payment_requests (chain_id, token_address, recipient)
      WHERE proof_status <> 'verified' AND amount_locked`);
    await q.query(`
      CREATE INDEX payment_requests_expiring ON payment_requests (expires_at)
      WHERE status IN ('requested','opened') AND proof_status = 'none'`);
    // The outbox: one row per event, written in the transaction of the state change that caused it.
    // id is the delivery_id partners see. deliver is false for events recorded while webhooks were off.
    await q.query(`
      CREATE TABLE webhook_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        partner_id uuid NOT NULL REFERENCES partners(id),
        request_id uuid NOT NULL REFERENCES payment_requests(id),
        event text NOT NULL CHECK (event IN ('payment.proof_attached','payment.proof_verified')),
        test_mode boolean NOT NULL,
        deliver boolean NOT NULL,
        state text NOT NULL CHECK (state IN ('pending','delivering','delivered','abandoned','skipped')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz(3),
        last_attempt_at timestamptz(3),
        delivered_at timestamptz(3),
        recorded_at timestamptz(3) NOT NULL DEFAULT now(),
        relayed_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX webhook_events_partner ON webhook_events (partner_id, state, recorded_at)`);
    await q.query(`CREATE INDEX webhook_events_request ON webhook_events (request_id)`);
    await q.query(`CREATE INDEX webhook_events_unrelayed ON webhook_events (recorded_at) WHERE state = 'pending'`);
    await q.query(`
      CREATE TABLE webhook_attempts (
        id bigserial PRIMARY KEY,
        event_id uuid NOT NULL REFERENCES webhook_events(id),
        attempt integer NOT NULL,
        started_at timestamptz(3) NOT NULL,
        duration_ms integer NOT NULL,
        status_code integer,
        error_class text,
        error_message text,
        outcome text NOT NULL CHECK (outcome IN ('delivered','retry','abandoned')),
        UNIQUE (event_id, attempt)
      )`);
    // Transfers the chain scan saw to a merchant wallet that paid nothing: kept for operators.
    await q.query(`
      CREATE TABLE unmatched_transfers (
        id bigserial PRIMARY KEY,
        chain_id numeric(78,0) NOT NULL,
        tx_hash text NOT NULL,
        log_index integer NOT NULL,
        block_number bigint NOT NULL,
        token_address text NOT NULL,
        from_address text NOT NULL,
        to_address text NOT NULL,
        value numeric(78,0) NOT NULL,
        reason text NOT NULL,
        seen_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (chain_id, tx_hash, log_index)
      )`);
    await q.query(`
      CREATE TABLE chain_cursors (
        chain_id numeric(78,0) NOT NULL,
        token_address text NOT NULL,
        last_block bigint NOT NULL,
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (chain_id, token_address)
      )`);
    // Token metadata read from the contract, kept so a restart with the RPC down still knows decimals.
    await q.query(`
      CREATE TABLE assets (
        chain_id numeric(78,0) NOT NULL,
        token_address text NOT NULL,
        symbol text NOT NULL,
        decimals integer NOT NULL,
        PRIMARY KEY (chain_id, token_address)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['assets', 'chain_cursors', 'unmatched_transfers', 'webhook_attempts', 'webhook_events',
      'payment_requests', 'merchants', 'api_keys', 'partners']) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
