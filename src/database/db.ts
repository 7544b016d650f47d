import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';

export interface Queryable {
  query<T extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[], name?: string): Promise<T[]>;
}

/** A transaction's connection. Outbox rows and state changes of one use case go through the same one. */
export class Tx implements Queryable {
  constructor(private readonly client: PoolClient) {}
  async query<T extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = [], name?: string): Promise<T[]> {
    const res = await this.client.query<T>(name ? { name, text: sql, values: params } : { text: sql, values: params });
    return res.rows;
  }
}

/**
 * SQL access over TypeORM's own pg pool. Hot paths pass a statement name so Postgres prepares the statement
 * once per connection (one round trip per query, no re-planning); TypeORM's repository save() would cost
 * BEGIN+INSERT+COMMIT for every write (PERFORMANCE.md).
 */
export class Db implements Queryable {
  private readonly pool: Pool;

  constructor(readonly dataSource: DataSource) {
    this.pool = (dataSource.driver as unknown as { master: Pool }).master;
  }

  async query<T extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = [], name?: string): Promise<T[]> {
    const res = await this.pool.query<T>(name ? { name, text: sql, values: params } : { text: sql, values: params });
    return res.rows;
  }

  async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(new Tx(client));
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}

export { isUniqueViolation } from './pg-errors';
