import { createDataSource, dataSourceOptions, POOL_ACQUIRE_TIMEOUT_MS } from '../../src/database/data-source';
import { testEnv } from '../support/test-env';

/*
 * A query that waits for a pool connection gives up after the acquire timeout instead of waiting for ever:
 * a transaction that awaits a second connection while holding one, with every connection held that way,
 * used to hang the whole process (plan advances, 2026-11-27). Failing, it rolls back and frees its own.
 */
it('the app waits for a pool connection at most POOL_ACQUIRE_TIMEOUT_MS', () => {
  const extra = (dataSourceOptions('postgres://x@127.0.0.1/x') as { extra: { connectionTimeoutMillis: number } }).extra;
  expect(extra.connectionTimeoutMillis).toBe(POOL_ACQUIRE_TIMEOUT_MS);
});

it('a transaction awaiting a second connection of a full pool fails after the timeout and frees its own', async () => {
  const ds = await createDataSource(testEnv().databaseUrl, 1, 300).initialize();
  try {
    const started = Date.now();
    await expect(ds.transaction(async (em) => {
      await em.query('SELECT 1');
      await ds.query('SELECT 2'); // the pool's only connection is this transaction's
    })).rejects.toThrow(/timeout exceeded when trying to connect/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // The transaction rolled back and gave its connection back: the pool serves again.
    expect(await ds.query('SELECT 3 AS n')).toEqual([{ n: 3 }]);
  } finally {
    await ds.destroy();
  }
});
