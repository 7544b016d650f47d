import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { WebhookSecretsSealed1764000000006 } from '../../migrations/1764000000006-webhook-secrets-sealed';
import { isSealed, SecretBox } from '../../src/common/crypto/secret-box';
import { loadSecretKeys } from '../../src/config/config';
import { createDataSource, migrate } from '../../src/database/data-source';
import { WebhookEndpointEntity } from '../../src/modules/webhooks/webhook-endpoint.entity';
import { WebhookEndpointsRepository } from '../../src/modules/webhooks/webhook-endpoints.repository';
import { WebhookSecrets } from '../../src/modules/webhooks/webhook-secrets';
import { testEnv } from '../support/test-env';

/*
 * The migration that seals the plaintext webhook secrets written before issue 10 (point 6), run as
 * `npm run migrate` runs it (migrate(), the process environment: NODE_ENV=test here, so the development key),
 * on a database of its own brought back to the schema before it. Also the re-key command's work
 * (WebhookSecrets.resealAll) on the same rows.
 */
const url = new URL(testEnv().databaseUrl);
url.pathname = `${url.pathname}_secrets`;
const DATABASE_URL = url.toString();

let ds: DataSource;

async function dropDatabase(): Promise<void> {
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${url.pathname.slice(1)}" WITH (FORCE)`);
  await admin.end();
}

const SEALING = 'WebhookSecretsSealed1764000000006';

beforeAll(async () => {
  await dropDatabase();
  await migrate(DATABASE_URL);
  ds = createDataSource(DATABASE_URL, 2);
  await ds.initialize();
  // Back to the schema before the sealing migration (and any later ones): the rows below are what older
  // versions wrote.
  for (;;) {
    const [last] = await ds.query(`SELECT name FROM migrations ORDER BY id DESC LIMIT 1`);
    // TypeORM's undo ignores a migration's own `transaction = false` (one that builds indexes CONCURRENTLY).
    const own = ds.migrations.find((m) => m.name === last.name)?.transaction;
    await ds.undoLastMigration({ transaction: own === false ? 'none' : 'each' });
    if (last.name === SEALING) break;
  }
});
afterAll(async () => {
  await ds?.destroy();
  await dropDatabase();
});

async function plaintextRow(secret: string, previous: string | null): Promise<string> {
  const [p] = await ds.query(
    `INSERT INTO partners (slug, name, default_currency, allowed_expiry_minutes, default_expiry_minutes)
     VALUES ($1, 'Migrated', 'usd', '{60}', 60) RETURNING id`,
    [`mig-${randomBytes(4).toString('hex')}`],
  );
  await ds.query(`INSERT INTO webhook_endpoints (partner_id, url, enabled, secret, previous_secret) VALUES ($1, 'https://93.184.216.34/h', true, $2, $3)`, [
    p.id,
    secret,
    previous,
  ]);
  return p.id;
}

async function row(partnerId: string): Promise<{ secret: string; previous_secret: string | null }> {
  const [r] = await ds.query(`SELECT secret, previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [partnerId]);
  return r;
}

const hex64 = () => randomBytes(32).toString('hex');

it('outside development and test, stops naming SECRET_KEY when plaintext rows exist, and changes nothing', async () => {
  const secret = hex64();
  const partnerId = await plaintextRow(secret, null);
  const q = ds.createQueryRunner();
  try {
    await expect(new WebhookSecretsSealed1764000000006({ NODE_ENV: 'production' }).up(q)).rejects.toThrow(/SECRET_KEY is required/);
    await expect(new WebhookSecretsSealed1764000000006({ NODE_ENV: 'production', SECRET_KEY: 'short' }).up(q)).rejects.toThrow(/SECRET_KEY must be 32 bytes/);
  } finally {
    await q.release();
  }
  expect(await row(partnerId)).toEqual({ secret, previous_secret: null });
  await ds.query(`DELETE FROM webhook_endpoints WHERE partner_id = $1`, [partnerId]);
});

it('seals plaintext secrets (current and pending previous) under SECRET_KEY; the re-key command moves them to a new key', async () => {
  const secret = hex64();
  const previous = hex64();
  const rotating = await plaintextRow(secret, previous);
  const plain = hex64();
  const single = await plaintextRow(plain, null);

  expect(await migrate(DATABASE_URL)).toContain(SEALING);

  const devKey = loadSecretKeys({ NODE_ENV: 'test' }).secretKey;
  const box = new SecretBox(devKey);
  const r = await row(rotating);
  expect(isSealed(r.secret) && isSealed(r.previous_secret!)).toBe(true);
  expect(r.secret).not.toContain(secret);
  expect(r.previous_secret).not.toContain(previous);
  expect(box.open(r.secret, rotating)).toBe(secret);
  expect(box.open(r.previous_secret!, rotating)).toBe(previous);
  const s = await row(single);
  expect(s.previous_secret).toBeNull();
  expect(box.open(s.secret, single)).toBe(plain);

  // SECRET_KEY rotated: the command seals every row again under the new key; a second run finds nothing.
  const newKey = randomBytes(32);
  const repo = new WebhookEndpointsRepository(ds.getRepository(WebhookEndpointEntity));
  const secrets = new WebhookSecrets({ secretKey: newKey, secretKeyPrevious: devKey }, repo);
  expect(await secrets.resealAll(1)).toBe(2);
  expect(await secrets.resealAll()).toBe(0);
  const newOnly = new SecretBox(newKey);
  const again = await row(rotating);
  expect(newOnly.open(again.secret, rotating)).toBe(secret);
  expect(newOnly.open(again.previous_secret!, rotating)).toBe(previous);
  expect(newOnly.open((await row(single)).secret, single)).toBe(plain);
});

it('the re-key command stops at a value it cannot open, so SECRET_KEY_PREVIOUS is not removed while one still needs it; a plaintext value is sealed', async () => {
  await migrate(DATABASE_URL);
  const lostKey = randomBytes(32);
  const partnerId = await plaintextRow(hex64(), null);
  await ds.query(`UPDATE webhook_endpoints SET secret = $2 WHERE partner_id = $1`, [partnerId, new SecretBox(lostKey).seal(hex64(), partnerId)]);
  const repo = new WebhookEndpointsRepository(ds.getRepository(WebhookEndpointEntity));
  const devKey = loadSecretKeys({ NODE_ENV: 'test' }).secretKey;
  const secrets = new WebhookSecrets({ secretKey: randomBytes(32), secretKeyPrevious: devKey }, repo);
  // It counted such a row as sealed again and exited 0 (a review), though the value stayed under the lost key.
  await expect(secrets.resealAll()).rejects.toThrow(/^the webhook secret of partner .* does not open/);
  // A value written before sealing (a rolling upgrade) is the secret itself: a rotation seals it, never keeps it in the clear.
  const plain = hex64();
  const legacy = await plaintextRow(plain, null);
  const kept = secrets.carryKept(legacy, plain);
  expect(isSealed(kept)).toBe(true);
  await ds.query(`DELETE FROM webhook_endpoints WHERE partner_id = ANY($1::uuid[])`, [[partnerId, legacy]]);
});
