import 'reflect-metadata';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';

/** Every module's entities (each `*.entity.ts` belongs to the module whose folder holds it). */
export const ENTITIES_GLOB = join(__dirname, '..', 'modules', '**', '*.entity.{ts,js}');

/**
 * One DataSource definition for the app (TypeOrmModule.forRootAsync), the migration command and the schema
 * drift check. Schema changes are hand-reviewed migrations only: never synchronize.
 */
/**
 * How long a query waits for a pool connection before it fails. Waits of this length mean the pool is stuck,
 * not busy (p99 of a create at 50 connections on a pool of 20 is ~100-300 ms): a transaction that awaits a
 * second connection while holding one, twenty at once, waited for ever and hung the process (plan advances,
 * 2026-11-27). With the timeout they fail, roll back and give their connections back.
 */
export const POOL_ACQUIRE_TIMEOUT_MS = 10_000;

export function dataSourceOptions(databaseUrl: string, poolSize = 20, acquireTimeoutMs = POOL_ACQUIRE_TIMEOUT_MS): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: [ENTITIES_GLOB],
    synchronize: false,
    migrationsRun: false,
    migrations: [join(__dirname, '..', '..', 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    // gen_random_uuid() (core since Postgres 13), as the migrations write it.
    uuidExtension: 'pgcrypto',
    // An OLTP service: JIT compiling costs 100-200 ms whenever a short query's estimate passes jit_above_cost
    // (a list at 10 M rows did, issue 14), never paid back by a page of 50 rows. Parallel workers likewise:
    // status=expired's lapsed-row subqueries are estimated from the whole table's statistics, and once the
    // partial expiring indexes passed min_parallel_index_scan_size each ran under a Gather, 3-10 ms of worker
    // start-up to read a few index pages (measured at 10 M rows, docs/performance.md "Lists").
    extra: { max: poolSize, connectionTimeoutMillis: acquireTimeoutMs, options: '-c jit=off -c max_parallel_workers_per_gather=0' },
    logging: false,
  };
}

export function createDataSource(databaseUrl: string, poolSize = 20, acquireTimeoutMs = POOL_ACQUIRE_TIMEOUT_MS): DataSource {
  return new DataSource(dataSourceOptions(databaseUrl, poolSize, acquireTimeoutMs));
}

/** Creates the database named in the URL when it does not exist yet (DESIGN §2). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`DATABASE_URL names an unusual database "${name}"`);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
  } catch (e) {
    // Two processes racing to create the same database: the loser sees duplicate_database.
    if ((e as { code?: string }).code !== '42P04') throw e;
  } finally {
    await client.end();
  }
}

export async function migrate(databaseUrl: string): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  const ds = createDataSource(databaseUrl, 2);
  await ds.initialize();
  try {
    // A lock so two instances starting together do not run the same migration twice.
    await ds.query('SELECT pg_advisory_lock(72707301)');
    const done = await ds.runMigrations({ transaction: 'each' });
    await ds.query('SELECT pg_advisory_unlock(72707301)');
    return done.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}
