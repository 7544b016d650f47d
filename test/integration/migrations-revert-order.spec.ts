import { Client } from 'pg';
import { migrate, revertMigrations } from '../../src/database/data-source';
import { testEnv } from '../support/test-env';

/* TypeORM's undoLastMigration reverts the row with the highest id (the one applied last); a migration with an older
 * timestamp applied after a newer one (added to the code later) is the one reverted, and its own transaction flag is
 * the one that counts. */
const url = new URL(testEnv().databaseUrl);
url.pathname = `${url.pathname}_revorder`;
const DATABASE_URL = url.toString();
async function on<T>(database: string, work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${database}` });
  await c.connect();
  try { return await work(c); } finally { await c.end(); }
}
const drop = () => on('postgres', (c) => c.query(`DROP DATABASE IF EXISTS "${url.pathname.slice(1)}" WITH (FORCE)`));
beforeAll(drop);
afterAll(drop);

it('names and reverts the migration applied last, in its own transaction mode', async () => {
  await migrate(DATABASE_URL);
  const older = 'NotificationHandoverTracked1764000403400';
  const names = await on(url.pathname.slice(1), async (c) => (await c.query('SELECT name FROM migrations')).rows.map((r) => r.name));
  expect(names).toContain(older);
  // Applied after the newest: as when it reached the code after 1764000403500 had run.
  await on(url.pathname.slice(1), (c) => c.query('UPDATE migrations SET id = (SELECT max(id) + 1 FROM migrations) WHERE name = $1', [older]));
  const reverted = await revertMigrations(DATABASE_URL, 1);
  const left = await on(url.pathname.slice(1), async (c) => (await c.query('SELECT name FROM migrations')).rows.map((r) => r.name));
  expect(left).not.toContain(reverted[0]);
  expect(reverted).toEqual([older]);
}, 120_000);
