import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { dataSourceOptions, migrate, revertMigrations } from '../../src/database/data-source';
import { schemaDrift } from '../../src/database/schema-drift';
import { testEnv } from '../support/test-env';

/*
 * Every migration's down, as an operator runs it (`npm run migrate:revert`), on a database of its own: all of
 * them, then up again, then the newest five and up again. Some downs drop or build indexes CONCURRENTLY, which
 * only works outside a transaction, as their ups run.
 */
const url = new URL(testEnv().databaseUrl);
url.pathname = `${url.pathname}_revert`;
const DATABASE_URL = url.toString();
const MIGRATIONS = readdirSync(join(__dirname, '..', '..', 'migrations')).filter((f) => f.endsWith('.ts'));

async function onAdmin<T>(database: string, work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${database}` });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}
const dropDatabase = () => onAdmin('postgres', (c) => c.query(`DROP DATABASE IF EXISTS "${url.pathname.slice(1)}" WITH (FORCE)`));

/** What the migrations left in the public schema besides their own bookkeeping table and extensions (pgcrypto). */
const leftovers = () =>
  onAdmin(url.pathname.slice(1), async (c) => {
    const { rows } = await c.query<{ what: string }>(`
      SELECT relname AS what FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname NOT LIKE 'migrations%'
        AND oid NOT IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'migrations'::regclass)
      UNION ALL SELECT proname FROM pg_proc p WHERE pronamespace = 'public'::regnamespace
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
      UNION ALL SELECT stxname FROM pg_statistic_ext WHERE stxnamespace = 'public'::regnamespace`);
    return rows.map((r) => r.what);
  });

beforeAll(dropDatabase);
afterAll(dropDatabase);

it('reverts every migration, and up runs again on what the downs left', async () => {
  expect(await migrate(DATABASE_URL)).toHaveLength(MIGRATIONS.length);
  const reverted = await revertMigrations(DATABASE_URL, MIGRATIONS.length + 1);
  expect(reverted).toHaveLength(MIGRATIONS.length);
  expect(await leftovers()).toEqual([]);

  expect(await migrate(DATABASE_URL)).toHaveLength(MIGRATIONS.length);
  const newest = await revertMigrations(DATABASE_URL, 5);
  expect(newest).toEqual(reverted.slice(0, 5));
  expect(await migrate(DATABASE_URL)).toEqual([...newest].reverse());
  expect(await schemaDrift(dataSourceOptions(DATABASE_URL, 2))).toEqual([]);
}, 120_000);
