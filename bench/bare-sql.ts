/**
 * The two statements of the baselines (bench/bare-server.ts and the framework floor bench/floor-server.ts):
 * one prepared INSERT … RETURNING for create, one prepared primary-key SELECT for get, on a copy of
 * payment_requests (bench/database.ts prepareBareTable). Both servers are children of the bench, which passes
 * the database, the table and the fixture ids by environment.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { REQUEST_COLUMNS } from '../src/modules/requests/infrastructure/request.row';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`baseline server: ${name} is required`);
  return v;
};

export interface BaselineSql {
  pool: Pool;
  /** Validates a create body as the bare server does; null when it is not { fiat_amount_int, idempotency_key }. */
  insert(body: unknown): Promise<Record<string, unknown>> | null;
  select(id: string): Promise<Record<string, unknown> | undefined>;
}

export function baselineSql(): BaselineSql {
  const table = env('BARE_TABLE');
  if (!/^[a-z_]+$/.test(table)) throw new Error(`baseline server: unusual table "${table}"`);
  const pool = new Pool({ connectionString: env('BARE_DATABASE_URL'), max: 20 });
  const partnerId = env('BARE_PARTNER_ID');
  const merchantId = env('BARE_MERCHANT_ID');
  const recipient = env('BARE_RECIPIENT');
  const tokenAddress = env('BARE_TOKEN_ADDRESS');
  const INSERT = {
    name: 'bare_insert',
    text: `INSERT INTO ${table} (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount,
        fiat_currency, rate, amount, chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until)
      VALUES ($1, $2, $3, true, $4, $5, 'usd', 1, $6, 31337, $7, $8, 'pos', $9, now() + make_interval(mins => 60),
        now() + make_interval(mins => 120))
      RETURNING ${REQUEST_COLUMNS}`,
  };
  const SELECT = { name: 'bare_select', text: `SELECT ${REQUEST_COLUMNS} FROM ${table} WHERE id = $1` };
  // The open-amount index is unique per merchant and asset: a per-process sequence under the fiat amount keeps
  // every row's amount distinct (each server has its own table, created empty for each bench run).
  let seq = 0n;
  return {
    pool,
    insert(body) {
      const { fiat_amount_int: fiat, idempotency_key: key } = (body ?? {}) as { fiat_amount_int?: unknown; idempotency_key?: unknown };
      if (!Number.isInteger(fiat) || typeof key !== 'string') return null;
      const amount = (BigInt(fiat as number) * 1_000_000_000_000n + seq++).toString();
      return pool
        .query({ ...INSERT, values: [randomUUID(), partnerId, merchantId, key, fiat, amount, tokenAddress, recipient, '{}'] })
        .then((r) => r.rows[0]);
    },
    select: (id) => pool.query({ ...SELECT, values: [id] }).then((r) => r.rows[0]),
  };
}
