/**
 * The bare baseline (PERFORMANCE.md's L_ins and L_get): plain node:http + pg, no framework. POST parses the
 * JSON body and runs one prepared INSERT … RETURNING; GET /:id runs one prepared primary-key SELECT
 * (bench/bare-sql.ts). Both answer JSON. Run as a child of bench/run.ts or bench/framework-floor.ts, which
 * pass the database, table and fixture ids by environment and read the port from an IPC message.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { baselineSql, UUID } from './bare-sql';

const sql = baselineSql();

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function create(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return send(res, 400, { ok: false, error: 'invalid_json' });
  }
  const inserted = sql.insert(body);
  if (!inserted) return send(res, 400, { ok: false, error: 'invalid_request' });
  send(res, 201, { ok: true, ...(await inserted) });
}

async function get(id: string, res: http.ServerResponse): Promise<void> {
  if (!UUID.test(id)) return send(res, 404, { ok: false, error: 'not_found' });
  const row = await sql.select(id);
  if (!row) return send(res, 404, { ok: false, error: 'not_found' });
  send(res, 200, { ok: true, ...row });
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
  server.close(() => void sql.pool.end().then(() => process.exit(0)));
});
