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

/**
 * `UPDATE webhook_events SET <set> WHERE <where>` for tests that change events a running worker may be claiming
 * or recording: rows are locked in id order, as the worker's claim and record lock theirs, so the two wait for
 * each other instead of deadlocking (a plain UPDATE locks in scan order: "deadlock detected" in a loaded run).
 * `set` and `where` are the test's own SQL; `params` are numbered from $1 in `where`.
 */
export async function updateEvents(set: string, where: string, params: unknown[] = []): Promise<void> {
  await sql(
    `WITH chosen AS (SELECT id FROM webhook_events WHERE ${where} ORDER BY id FOR UPDATE)
     UPDATE webhook_events SET ${set} WHERE id = ANY(ARRAY(SELECT id FROM chosen))`,
    params,
  );
}

/** Marks open webhook deliveries abandoned (of `partnerIds`, or all), so nothing is left for a later test or file to send. */
export async function abandonOpenDeliveries(partnerIds?: string[]): Promise<void> {
  await updateEvents(
    `state = 'abandoned', next_attempt_at = NULL`,
    `state IN ('pending','delivering') AND ($1::uuid[] IS NULL OR partner_id = ANY($1))`,
    [partnerIds ?? null],
  );
}
