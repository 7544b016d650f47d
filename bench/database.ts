import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { runNode } from './children';

export const ROOT = path.resolve(__dirname, '..');
export const SWC = ['-r', '@swc-node/register'];

/** The bench's own database: never the development or test one. */
export function benchDatabaseUrl(): string {
  return process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench';
}

function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unusual database name "${name}"`);
  return name;
}

/** Drops the bench database (so every run starts from the same empty tables); migrations recreate it. */
export async function dropDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  if (!/bench/.test(name)) throw new Error(`refusing to drop "${name}": the bench only drops a database named *bench*`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** The project's own migration command, as production runs it (it creates the database when missing). */
export async function migrate(url: string): Promise<void> {
  await runNode('migrate', [...SWC, 'scripts/migrate.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'development', DATABASE_URL: url },
  });
}

export interface BareFixture {
  table: string;
  partnerId: string;
  merchantId: string;
  recipient: string;
}

/**
 * bench_bare_requests: payment_requests' columns, defaults, checks, primary key, unique constraint and every
 * index (partial ones included), copied by LIKE … INCLUDING ALL so it follows the migrations, plus the same two
 * foreign keys (LIKE does not copy those, and the service's INSERT pays for their checks). The bare server's
 * rows reference a partner and merchant inserted here directly. The framework floor (bench/floor-server.ts)
 * gets a table of its own (bench_floor_requests), so neither baseline's amounts or size affect the other's.
 */
export async function prepareBareTable(url: string, table = 'bench_bare_requests'): Promise<BareFixture> {
  if (!/^bench_[a-z_]+$/.test(table)) throw new Error(`unusual baseline table "${table}"`);
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP TABLE IF EXISTS ${table}`);
    await client.query(`CREATE TABLE ${table} (LIKE payment_requests INCLUDING ALL)`);
    await client.query(`ALTER TABLE ${table}
      ADD FOREIGN KEY (partner_id) REFERENCES partners(id),
      ADD FOREIGN KEY (merchant_id) REFERENCES merchants(id)`);
    const slug = `bench-bare-${randomBytes(5).toString('hex')}`;
    const [partner] = (await client.query<{ id: string }>(
      `INSERT INTO partners (slug, name, default_currency, allowed_expiry_minutes, default_expiry_minutes)
       VALUES ($1, 'Bench bare baseline', 'usd', '{60}', 60) RETURNING id`,
      [slug],
    )).rows;
    const recipient = `0x${randomBytes(20).toString('hex')}`;
    const [merchant] = (await client.query<{ id: string }>(
      `INSERT INTO merchants (partner_id, test_mode, display_currency, wallet_address, onboarding_status,
         onboarding_token_salt, onboarding_token_hash, wallet_verified_at, terms_version, terms_accepted_at)
       VALUES ($1, true, 'usd', $2, 'complete', $3, $4, now(), 'bench', now()) RETURNING id`,
      [partner.id, recipient, randomBytes(16), randomBytes(32)],
    )).rows;
    return { table, partnerId: partner.id, merchantId: merchant.id, recipient };
  } finally {
    await client.end();
  }
}

export async function analyze(url: string, tables: string[]): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const t of tables) await client.query(`ANALYZE ${t}`);
  } finally {
    await client.end();
  }
}

/** Row counts, to tell how big the tables were when a case ran. */
export async function rowCounts(url: string): Promise<{ service: number; bare: number; floor: number | null }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ service: string; bare: string; floor: string | null }>(
      `SELECT (SELECT count(*) FROM payment_requests) AS service, (SELECT count(*) FROM bench_bare_requests) AS bare`,
    );
    const hasFloor = (await client.query(`SELECT to_regclass('bench_floor_requests') IS NOT NULL AS present`)).rows[0].present;
    if (hasFloor) r.rows[0].floor = (await client.query('SELECT count(*) AS n FROM bench_floor_requests')).rows[0].n;
    return { service: Number(r.rows[0].service), bare: Number(r.rows[0].bare), floor: r.rows[0].floor ? Number(r.rows[0].floor) : null };
  } finally {
    await client.end();
  }
}
