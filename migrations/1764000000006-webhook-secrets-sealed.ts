import { MigrationInterface, QueryRunner } from 'typeorm';
import { loadSecretKeys } from '../src/config/config';
import { isSealed, SecretBox } from '../src/common/crypto/secret-box';

type Env = Record<string, string | undefined>;

interface Row {
  partner_id: string;
  secret: string | null;
  previous_secret: string | null;
}

/**
 * Webhook secrets are stored sealed (AES-256-GCM under SECRET_KEY, the partner id bound as associated data;
 * see WebhookSecrets): the plaintext rows written before are sealed here. The key is read from the
 * migration process's environment by the config's own rules, so it is the key the service will open them
 * with; with rows to seal and no SECRET_KEY (outside development and test) the migration stops naming it.
 * No schema change: the columns stay text.
 */
export class WebhookSecretsSealed1764000000006 implements MigrationInterface {
  name = 'WebhookSecretsSealed1764000000006';

  constructor(private readonly env: Env = process.env) {}

  async up(q: QueryRunner): Promise<void> {
    const rows: Row[] = await q.query(
      `SELECT partner_id, secret, previous_secret FROM webhook_endpoints
        WHERE secret NOT LIKE 'enc:v1:%' OR previous_secret NOT LIKE 'enc:v1:%' FOR UPDATE`,
    );
    if (rows.length === 0) return;
    const box = this.box();
    const seal = (v: string | null, partnerId: string) => (v === null || isSealed(v) ? v : box.seal(v, partnerId));
    for (const r of rows) {
      await q.query(`UPDATE webhook_endpoints SET secret = $2, previous_secret = $3 WHERE partner_id = $1`, [
        r.partner_id,
        seal(r.secret, r.partner_id),
        seal(r.previous_secret, r.partner_id),
      ]);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    const rows: Row[] = await q.query(
      `SELECT partner_id, secret, previous_secret FROM webhook_endpoints
        WHERE secret LIKE 'enc:v1:%' OR previous_secret LIKE 'enc:v1:%' FOR UPDATE`,
    );
    if (rows.length === 0) return;
    const box = this.box();
    const open = (v: string | null, partnerId: string) => (v === null || !isSealed(v) ? v : box.open(v, partnerId));
    for (const r of rows) {
      await q.query(`UPDATE webhook_endpoints SET secret = $2, previous_secret = $3 WHERE partner_id = $1`, [
        r.partner_id,
        open(r.secret, r.partner_id),
        open(r.previous_secret, r.partner_id),
      ]);
    }
  }

  private box(): SecretBox {
    const { secretKey, secretKeyPrevious } = loadSecretKeys(this.env);
    return new SecretBox(secretKey, secretKeyPrevious ?? undefined);
  }
}
