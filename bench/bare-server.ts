/**
 * The bare baseline (PERFORMANCE.md's L_ins and L_get): plain node:http + pg, no framework, on
 * bench_bare_requests. POST parses the JSON body and runs one prepared INSERT … RETURNING; GET /:id runs one
 * prepared primary-key SELECT. Both answer JSON. Run as a child of bench/run.ts, which passes the database
 * and the fixture ids by environment and reads the port from an IPC message.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Pool } from 'pg';
import { REQUEST_COLUMNS } from '../src/modules/requests/infrastructure/request.row';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`bare server: ${name} is required`);
  return v;
};

const pool = new Pool({ connectionString: env('BARE_DATABASE_URL'), max: 20 });
const partnerId = env('BARE_PARTNER_ID');
const merchantId = env('BARE_MERCHANT_ID');
const recipient = env('BARE_RECIPIENT');
const tokenAddress = env('BARE_TOKEN_ADDRESS');

const INSERT = {
  name: 'bare_insert',
  text: `INSERT INTO bench_bare_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount,
      fiat_currency, rate, amount, chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until)
    VALUES ($1, $2, $3, true, $4, $5, 'usd', 1, $6, 31337, $7, $8, 'pos', $9, now() + make_interval(mins => 60),
      now() + make_interval(mins => 120))
    RETURNING ${REQUEST_COLUMNS}`,
};
const SELECT = { name: 'bare_select', text: `SELECT ${REQUEST_COLUMNS} FROM bench_bare_requests WHERE id = $1` };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// The open-amount index is unique per merchant and asset: a per-process sequence under the fiat amount keeps
// every bare row's amount distinct (the table is created empty for each bench run).
let seq = 0n;

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function create(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  let body: { fiat_amount_int?: unknown; idempotency_key?: unknown };
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return send(res, 400, { ok: false, error: 'invalid_json' });
  }
  const fiat = body.fiat_amount_int;
  const key = body.idempotency_key;
  if (!Number.isInteger(fiat) || typeof key !== 'string') return send(res, 400, { ok: false, error: 'invalid_request' });
  const amount = (BigInt(fiat as number) * 1_000_000_000_000n + seq++).toString();
  const { rows } = await pool.query({
    ...INSERT,
    values: [randomUUID(), partnerId, merchantId, key, fiat, amount, tokenAddress, recipient, '{}'],
  });
  send(res, 201, { ok: true, ...rows[0] });
}

async function get(id: string, res: http.ServerResponse): Promise<void> {
  if (!UUID.test(id)) return send(res, 404, { ok: false, error: 'not_found' });
  const { rows } = await pool.query({ ...SELECT, values: [id] });
  if (!rows[0]) return send(res, 404, { ok: false, error: 'not_found' });
  send(res, 200, { ok: true, ...rows[0] });
}

const server = http.createServer((req, res) => {
  const work = req.method === 'POST' ? create(req, res) : req.method === 'GET' ? get((req.url ?? '/').slice(1), res) : null;
  if (!work) return send(res, 404, { ok: false, error: 'not_found' });
  work.catch((e: Error) => {
    console.error(`bare server: ${e.message}`);
    if (!res.headersSent) send(res, 500, { ok: false, error: 'internal_error' });
  });
});
server.keepAliveTimeout = 65000;
server.headersTimeout = 66000;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ port });
});

process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => void pool.end().then(() => process.exit(0)));
});
