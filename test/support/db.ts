import { Pool } from 'pg';
import { testEnv } from './test-env';

/**
 * Direct SQL on the run's database, for arranging state no public endpoint reaches yet (a lapsed expiry, a
 * proof) and for checking stored state. One small pool per test file; close it in afterAll.
 */
let pool: Pool | null = null;

export async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  pool ??= new Pool({ connectionString: testEnv().databaseUrl, max: 2 });
  return (await pool.query(text, params)).rows as T[];
}

export async function closeSql(): Promise<void> {
  const p = pool;
  pool = null;
  await p?.end();
}
