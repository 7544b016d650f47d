import type { Pool, PoolClient } from 'pg';
import type { EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/** name → text of every statement this process prepared: one text per name, checked on every call. */
const texts = new Map<string, string>();

/**
 * Per connection, the statements prepared again under a new name (`<name>~<n>`) since a migration changed the
 * type of a column they return (see run()). The refused statement stays on the connection, unused.
 */
const renamed = new WeakMap<PoolClient, Map<string, number>>();

/**
 * Runs a hot statement as a named prepared statement on em's connection (its transaction's, else one from the
 * pool for this statement): Postgres parses it once per connection and, after five runs, keeps a generic plan
 * unless that plan's estimated cost is well above the custom ones' (then it plans every call: see the create's
 * INSERT_AT_CONVERTED_SQL), where EntityManager.query sends an unnamed statement that is parsed and
 * custom-planned on every call.
 * Measured on the create INSERT (2026-11-24, `npm run bench:wire`, an in-process loop of 3,000 inserts and
 * `npm run bench` interleaved with the pre-TypeORM build, which named its statements): 437 bytes to Postgres per
 * create instead of 1,898; Postgres CPU per insert 0.54–0.64 ms instead of 1.15–1.35 (on 2 cores that CPU is
 * taken from the service); service CPU per create (bench median) 1.10 ms, as before TypeORM (1.12), where
 * EntityManager.query cost 1.17. The name must be unique per SQL text: Postgres keeps one per connection.
 */
export async function preparedQuery<T>(em: EntityManager, name: string, text: string, values: unknown[]): Promise<T[]> {
  // pg refuses a second text under a name only on a connection that prepared the first: fail on any of them.
  const known = texts.get(name);
  if (known === undefined) texts.set(name, text);
  else if (known !== text) throw new Error(`prepared statement ${name} is already used for another text`);
  if (em.queryRunner) {
    return run<T>((await em.queryRunner.connect()) as PoolClient, name, text, values, !em.queryRunner.isTransactionActive);
  }
  // Outside a transaction, a connection straight from the driver's pool for this one statement, without a
  // QueryRunner made for it. Released without the error: a statement that failed (a check the schema refused)
  // leaves its connection and its prepared statements usable; pg-pool drops one that broke by itself.
  const pool = (em.dataSource.driver as PostgresDriver).master as Pool;
  const client = await pool.connect();
  try {
    return await run<T>(client, name, text, values, true);
  } finally {
    client.release();
  }
}

/**
 * Runs the statement under its name on this connection. A migration that changed the type of a column the
 * statement returns, after this connection prepared it (a rolling deploy: the new build migrates while this one
 * still serves), makes Postgres refuse it there for good: "cached plan must not change result type" (0A000),
 * raised before the statement runs. Builds before this one answered 500 to every create and get on such
 * connections until restarted (migration 1764000403000 retyped metadata). The statement is prepared again
 * under a new name on this connection; outside a transaction it runs again at once (`again`), inside one the
 * transaction has failed and the next one runs the new name.
 */
async function run<T>(client: PoolClient, name: string, text: string, values: unknown[], again: boolean): Promise<T[]> {
  const names = renamed.get(client);
  const current = names?.has(name) ? `${name}~${names.get(name)}` : name;
  try {
    return (await client.query({ name: current, text, values })).rows as T[];
  } catch (e) {
    if (!isStalePlan(e)) throw e;
    const next = (names?.get(name) ?? 0) + 1;
    renamed.set(client, (names ?? new Map<string, number>()).set(name, next));
    if (!again) throw e;
    return (await client.query({ name: `${name}~${next}`, text, values })).rows as T[];
  }
}

/** By the server's routine, which lc_messages does not translate; the English message as well. */
function isStalePlan(e: unknown): boolean {
  const err = e as { code?: string; message?: string; routine?: string };
  return err?.code === '0A000' && (err.routine === 'RevalidateCachedQuery' || /cached plan must not change result type/.test(err.message ?? ''));
}
