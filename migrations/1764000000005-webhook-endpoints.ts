import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook settings move from partners to their own table, owned by the webhooks module (one owner per
 * table). Existing settings, secrets and pending rotations are copied unchanged.
 */
export class WebhookEndpoints1764000000005 implements MigrationInterface {
  name = 'WebhookEndpoints1764000000005';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        partner_id uuid PRIMARY KEY REFERENCES partners(id),
        url text,
        enabled boolean NOT NULL DEFAULT false,
        enabled_at timestamptz(3),
        secret text,
        previous_secret text,
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      INSERT INTO webhook_endpoints (partner_id, url, enabled, enabled_at, secret, previous_secret, updated_at)
      SELECT id, webhook_url, webhook_enabled, webhook_enabled_at, webhook_secret, webhook_previous_secret, updated_at
      FROM partners
      WHERE webhook_url IS NOT NULL OR webhook_secret IS NOT NULL OR webhook_enabled`);
    await q.query(`
      ALTER TABLE partners DROP COLUMN webhook_url, DROP COLUMN webhook_enabled, DROP COLUMN webhook_enabled_at,
        DROP COLUMN webhook_secret, DROP COLUMN webhook_previous_secret`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE partners ADD COLUMN webhook_url text, ADD COLUMN webhook_enabled boolean NOT NULL DEFAULT false,
        ADD COLUMN webhook_enabled_at timestamptz(3), ADD COLUMN webhook_secret text, ADD COLUMN webhook_previous_secret text`);
    await q.query(`
      UPDATE partners p SET webhook_url = e.url, webhook_enabled = e.enabled, webhook_enabled_at = e.enabled_at,
        webhook_secret = e.secret, webhook_previous_secret = e.previous_secret
      FROM webhook_endpoints e WHERE e.partner_id = p.id`);
    await q.query(`DROP TABLE webhook_endpoints`);
  }
}
