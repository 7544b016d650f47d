import 'reflect-metadata';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { boundedClient } from './bounded-client';

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

/**
 * The default of DATABASE_QUERY_TIMEOUT_MS: a query of the pool that Postgres has not answered after this
 * long closes its connection (bounded-client.ts). Without it, a pooled connection left half-open (a failover,
 * a partition: no FIN, no RST) held every query sent on it until the kernel gave the socket up (~15 min at
 * tcp_retries2=15), and once the pool was full of them every call failed on the acquire timeout; keepalives
 * cannot see it, since Linux sends no keepalive probe while sent data is unacknowledged.
 * 30 s is far above any statement the service runs (the slowest measured is the webhook re-drive's ranking,
 * 4.5 s at its worst before its index, docs/performance.md; lists and CSV export batches take milliseconds) and
 * above its lock waits, which last as long as the holder's transaction (milliseconds: the service holds no row
 * or advisory lock across a network call in a transaction; the chain scans only try theirs). A query
 * cut by it is a 500: an open transaction rolls back, a COMMIT or single write cut by it has an unknown outcome
 * (applied or not, as after any lost connection). Migrations run without it (migrate).
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

/**
 * Server-side TCP keepalive and user timeout of each connection (USERSET settings, Postgres 12+): a backend whose
 * client vanished without a FIN (the same partition, seen from the server) otherwise stays "idle in
 * transaction" holding its row and advisory locks for the OS default of 2 h (tcp_keepalives_idle 7200 s), or
 * blocked sending a result for ~15 min, and the service's fresh connections wait on those locks. With these the
 * server drops such a backend, rolling its transaction back, within about a minute. A live client's kernel
 * answers the probes, so nothing legitimate (a long statement, the chain scan's lock connection idle across its
 * RPC calls) is ever cut by them. client_connection_check_interval (Postgres 14+, DESIGN's minimum) makes a
 * backend running a statement or waiting on a lock notice its client gone too (it reads no socket meanwhile):
 * the statement is cut when the connection closed (the bound's cancel may not arrive: a TLS-only proxy, a
 * vanished client).
 */
export const SERVER_KEEPALIVE =
  '-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3 -c tcp_user_timeout=60000 -c client_connection_check_interval=5000';

/**
 * `queryTimeoutMs`: see DEFAULT_QUERY_TIMEOUT_MS; 0 leaves queries unbounded (migrations, which may build an
 * index for minutes or wait on another instance's migration lock).
 */
export function dataSourceOptions(
  databaseUrl: string,
  poolSize = 20,
  acquireTimeoutMs = POOL_ACQUIRE_TIMEOUT_MS,
  queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS,
): DataSourceOptions {
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
    // The pool's Client bounds each query (queryTimeoutMs) and keeps a checked-out client's `error` event from
    // being uncaught. pg's own query_timeout is not used: it leaves the connection in the pool (bounded-client.ts).
    // No client-side keepAlive: pg-pool already closes a connection idle for 10 s (idleTimeoutMillis), and a
    // busy one has data in flight, which keepalive probes wait for.
    extra: {
      max: poolSize,
      connectionTimeoutMillis: acquireTimeoutMs,
      options: `-c jit=off -c max_parallel_workers_per_gather=0 ${SERVER_KEEPALIVE}`,
      Client: boundedClient(queryTimeoutMs),
    },
    logging: false,
  };
}

export function createDataSource(
  databaseUrl: string,
  poolSize = 20,
  acquireTimeoutMs = POOL_ACQUIRE_TIMEOUT_MS,
  queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS,
): DataSource {
  return new DataSource(dataSourceOptions(databaseUrl, poolSize, acquireTimeoutMs, queryTimeoutMs));
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
  // Unbounded queries: a migration may build an index for minutes, and the lock below waits for another
  // instance's migrations.
  const ds = createDataSource(databaseUrl, 2, POOL_ACQUIRE_TIMEOUT_MS, 0);
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

/**
 * Reverts the `count` migrations applied last, last first (as TypeORM's undoLastMigration picks them: by id, not
 * timestamp), and returns their names (fewer when fewer were applied). Each `down` runs as its `up` did: in a
 * transaction of its own, or outside any for a migration that sets `transaction = false` (it builds or drops
 * indexes CONCURRENTLY, or VACUUMs). TypeORM's undoLastMigration opens a transaction whatever that flag says, so
 * those downs fail with "cannot run inside a transaction block".
 */
export async function revertMigrations(databaseUrl: string, count = 1): Promise<string[]> {
  const ds = createDataSource(databaseUrl, 2, POOL_ACQUIRE_TIMEOUT_MS, 0);
  await ds.initialize();
  try {
    await ds.query('SELECT pg_advisory_lock(72707301)');
    const reverted: string[] = [];
    const [{ table }]: Array<{ table: string | null }> = await ds.query(`SELECT to_regclass('migrations')::text AS table`);
    for (let i = 0; table !== null && i < count; i++) {
      // The row undoLastMigration reverts: the one applied last (highest id), which is not the newest timestamp when a
      // migration older than the newest reached the code after it had run.
      const [last]: Array<{ name: string }> = await ds.query('SELECT name FROM migrations ORDER BY id DESC LIMIT 1');
      if (!last) break;
      const own = ds.migrations.find((m) => m.name === last.name)?.transaction;
      await ds.undoLastMigration({ transaction: own === false ? 'none' : 'each' });
      reverted.push(last.name);
    }
    await ds.query('SELECT pg_advisory_unlock(72707301)');
    return reverted;
  } finally {
    await ds.destroy();
  }
}
