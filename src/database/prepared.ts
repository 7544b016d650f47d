import type { Pool, PoolClient } from 'pg';
import type { EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/** name → text of every statement this process prepared: one text per name, checked on every call. */
const texts = new Map<string, string>();

/**
 * Runs a hot statement as a named prepared statement on em's connection (its transaction's, else one from the
 * pool for this statement): Postgres parses it once per connection and, after five runs, keeps a generic plan,
 * where EntityManager.query sends an unnamed statement that is parsed and custom-planned on every call.
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
  // Outside a transaction, straight to the driver's pool (it checks a connection out and back in), without a
  // QueryRunner made and connected for one statement.
  const client = em.queryRunner ? ((await em.queryRunner.connect()) as PoolClient) : (em.dataSource.driver as PostgresDriver).master as Pool;
  const { rows } = await client.query({ name, text, values });
  return rows as T[];
}
