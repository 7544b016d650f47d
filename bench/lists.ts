/**
 * `npm run bench:lists` (issue 14): the list endpoints at 10 k, 1 M and 10 M requests of one partner. Every
 * filter of spec §4.3 and its combinations, and the dashboard's list filters (source, plan_id), timed through
 * HTTP with p50/p99 per filter and size, and the server-side time: the EXPLAIN ANALYZE execution time (median
 * of 5) of the exact SQL the repository builds for that filter. Goal: p99 at 10 M within 2× of p99 at 10 k for
 * every filter, server side under 20 ms.
 *
 * The sizes are measured interleaved, so that the machine's load drift (2 shared cores) hits every size alike:
 * each size has its own database and its own started service, all running at once, and for each filter the
 * requests go round-robin over the sizes (10k, 1M, 10M, 10k, 1M, 10M, …, one in flight at a time), 20 warm-up
 * rounds then BENCH_LIST_REQUESTS measured ones (default 200). Each size's p99 thus comes from the same
 * seconds as the others'; the p99 ratio 10M / 10k is printed per filter.
 *
 * Each size's rows are seeded in SQL (INSERT … SELECT generate_series, triggers and foreign-key checks off for
 * the session, then VACUUM ANALYZE), one database after the other, before any timing. The databases are named
 * by BENCH_LISTS_DATABASE_URL: `{size}` in it is replaced by the size (10k, 1m, 10m), else `_<size>` is
 * appended to its database name (default prs_bench_lists_10k, _1m, _10m). They are dropped and migrated at the
 * start and dropped at the end, also on failure (BENCH_LISTS_KEEP=1 keeps them). BENCH_LISTS_REUSE=1 keeps
 * them too and starts from each one that already holds a seeded table: pending migrations only, the partner,
 * key, merchant wallet and plan read back from bench_lists_seed, and seeding only up to the size if it holds
 * fewer rows (seeding 10 M takes minutes on 2 cores; more rows than the size is refused; the seeded open
 * requests stay open for 30 days). BENCH_LIST_SIZES limits the sizes, e.g. 10k,1m. The services are spawned
 * as bench/service.ts does (API role, one local Hardhat chain shared by all); each database's partner, key
 * and merchant come through the real APIs, its dashboard session through the real SIWE sign-in. Result:
 * .tmp/bench-lists.json.
 *
 * The seeded mix: rows older than the newest 5000 are settled, per 1000: 620 expired/none, 300 opened/verified,
 * 40 voided/none, 20 requested/verified, 20 expired/attached. The newest 5000 (open requests are bounded by the
 * expiry windows, not by the table's size), per 100: 29 requested/none and 30 opened/none open, 9 opened/attached
 * and 5 requested/attached in their claim window, 20 opened/verified, 5 voided/none, and 2 lapsed that the
 * expiry sweep has not reached yet (requested/none past expires_at, opened/attached past claim_until). Growing
 * a kept database to more rows first expires its previous window, as the sweep would. Sources: 70 % partner,
 * 10 % dashboard, 20 % handle, and one plan's charges (the oldest 60 rows, then 1 in 100 000). All rows are the one merchant's:
 * account_id and the dashboard read the worst case, the partner's whole table.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { RequestsRepository, type ListFilter } from '../src/modules/requests/infrastructure/requests.repository';
import { cleanup, onCleanup } from './children';
import { dropDatabase, migrate, ROOT } from './database';
import { call, seed, type Seeded } from './seed';
import { type SpawnedService, startChain, startService } from './service';

const SIZES: Record<string, number> = { '10k': 10_000, '1m': 1_000_000, '10m': 10_000_000 };
const WARMUP = 20;
/** The newest rows that may still be open: expiry windows bound them, not the table's size. */
const OPEN_WINDOW = 5000;
const EXPLAIN_RUNS = 5;
/**
 * The plan's first charges: the oldest rows of every size. A plan's charges are bounded by its periods, not by
 * the table: with them at every size a plan_id page is full (50 rows) at 10k as at 10M, and compares like with
 * like (with 1 in 100 000 alone, 10k returned 1 row and 10M 50).
 */
const PLAN_FIRST = 60;
const RESULT_FILE = path.join(ROOT, '.tmp', 'bench-lists.json');
const log = (msg: string) => console.log(`[bench:lists] ${msg}`);

function sizes(): string[] {
  const raw = (process.env.BENCH_LIST_SIZES ?? '10k,1m,10m').toLowerCase().split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of raw) if (!(s in SIZES)) throw new Error(`BENCH_LIST_SIZES: unknown size "${s}" (known: ${Object.keys(SIZES).join(', ')})`);
  return [...new Set(raw)].sort((a, b) => SIZES[a] - SIZES[b]);
}

function requestsPerFilter(): number {
  const raw = process.env.BENCH_LIST_REQUESTS ?? '200';
  if (!/^\d+$/.test(raw) || Number(raw) < 10) throw new Error(`BENCH_LIST_REQUESTS must be a whole number ≥ 10, got "${raw}"`);
  return Number(raw);
}

/** Seed row i's timestamp: 10 s apart from 2020-01-01, so `since` / `until` pick known positions. */
const T0 = Date.parse('2020-01-01T00:00:00Z');
const at = (i: number) => new Date(T0 + i * 10_000).toISOString();

interface Case {
  name: string;
  /** The list's filter, as the service passes it to the repository (for EXPLAIN). */
  filter: Omit<ListFilter, 'partnerId' | 'testMode' | 'limit' | 'offset'>;
  dashboard?: boolean;
}

function cases(s: Seeded, planId: string, size: number): Case[] {
  const m = s.merchantId;
  const recent = at(Math.floor(size * 0.99));
  const mid = at(Math.floor(size / 2));
  const api: Case[] = [
    { name: 'none', filter: {} },
    { name: 'since (cursor, last 1 %)', filter: { since: recent } },
    { name: 'since+until (middle)', filter: { since: mid, until: recent } },
    ...(['requested', 'opened', 'expired', 'voided'] as const).map((status) => ({ name: `status=${status}`, filter: { status } })),
    ...(['none', 'attached', 'verified'] as const).map((proofStatus) => ({ name: `proof_status=${proofStatus}`, filter: { proofStatus } })),
    { name: 'account_id', filter: { merchantId: m } },
    { name: 'account_id+status=opened', filter: { merchantId: m, status: 'opened' } },
    { name: 'account_id+proof_status=attached', filter: { merchantId: m, proofStatus: 'attached' } },
    { name: 'status=opened+proof_status=attached', filter: { status: 'opened', proofStatus: 'attached' } },
    { name: 'status=expired+proof_status=attached', filter: { status: 'expired', proofStatus: 'attached' } },
    { name: 'status=requested+proof_status=none', filter: { status: 'requested', proofStatus: 'none' } },
    { name: 'status=requested+since', filter: { status: 'requested', since: mid } },
    { name: 'status=expired+since+until', filter: { status: 'expired', since: mid, until: recent } },
  ];
  const dash: Case[] = [
    { name: 'dash none', filter: {} },
    { name: 'dash status=opened', filter: { status: 'opened' } },
    { name: 'dash status=expired', filter: { status: 'expired' } },
    { name: 'dash proof_status=attached', filter: { proofStatus: 'attached' } },
    { name: 'dash source=dashboard', filter: { source: 'dashboard' } },
    { name: 'dash source=handle+status=requested', filter: { source: 'handle', status: 'requested' } },
    { name: 'dash source=plan', filter: { source: 'plan' } },
    { name: 'dash plan_id', filter: { planId } },
    { name: 'dash plan_id+status=expired', filter: { planId, status: 'expired' } },
    { name: 'dash source=partner+since', filter: { source: 'partner', since: recent } },
  ].map((c) => ({ ...c, dashboard: true, filter: { ...c.filter, merchantId: m } as Case['filter'] }));
  return [...api, ...dash];
}

function query(c: Case): string {
  const f = c.filter;
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.proofStatus) q.set('proof_status', f.proofStatus);
  if (f.merchantId && !c.dashboard) q.set('account_id', f.merchantId);
  if (f.since) q.set('since', f.since);
  if (f.until) q.set('until', f.until);
  if (f.source) q.set('source', f.source);
  if (f.planId) q.set('plan_id', f.planId);
  return q.toString();
}

/** Grows payment_requests to `to` rows (seed rows from..to-1), as one INSERT … SELECT. */
async function grow(db: Client, s: Seeded, planId: string, recipient: string, token: string, from: number, to: number): Promise<void> {
  // What the expiry sweep did meanwhile: the previous size's open window is history now.
  await db.query(
    `UPDATE payment_requests SET status = 'expired', expires_at = created_at + interval '1 hour',
       claim_until = created_at + interval '75 minutes'
     WHERE status IN ('requested', 'opened') AND proof_status <> 'verified'`,
  );
  await db.query(`SET session_replication_role = replica`); // no per-row trigger nor foreign-key checks
  await db.query(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, status, proof_status,
       fiat_amount, fiat_currency, rate, amount, chain_id, token_address, recipient, amount_locked, payment_mode,
       metadata, source, plan_id, period_index, expires_at, claim_until, created_at, updated_at, tx_hash, proof_source)
     SELECT gen_random_uuid(), $1, $2, true, 'seed-' || i, st[1], st[2],
       100, 'usd', 1, 1000000000 + i, 31337, $4, $5, false, 'pos',
       CASE WHEN src = 'partner' THEN '{}'::jsonb END, src, CASE WHEN src = 'plan' THEN $3::uuid END,
       CASE WHEN src = 'plan' THEN CASE WHEN i < ${PLAN_FIRST} THEN i ELSE ${PLAN_FIRST} + i / 100000 END END,
       exp, exp + interval '15 minutes' * (CASE WHEN lapsed = 2 THEN -1 ELSE 1 END), created, created,
       CASE WHEN st[2] <> 'none' THEN '0x' || lpad(to_hex(i), 64, '0') END,
       CASE WHEN st[2] <> 'none' THEN 'payer' END
     FROM (
       SELECT i, created, lapsed, src, st,
         CASE WHEN lapsed > 0 THEN now() - interval '1 hour' - interval '1 hour' * (lapsed - 1)
              WHEN (st[1] IN ('requested', 'opened') AND st[2] <> 'verified') THEN now() + interval '30 days'
              ELSE created + interval '1 hour' END AS exp
       FROM (
         SELECT i, timestamptz '2020-01-01 00:00:00+00' + i * interval '10 seconds' AS created,
           CASE WHEN i < $7::bigint - ${OPEN_WINDOW} THEN 0 WHEN i % 100 = 0 THEN 1 WHEN i % 100 = 1 THEN 2 ELSE 0 END AS lapsed,
           CASE WHEN i < ${PLAN_FIRST} OR i % 100000 = 50 THEN 'plan' WHEN i % 10 = 7 THEN 'dashboard' WHEN i % 10 IN (3, 8) THEN 'handle'
                ELSE 'partner' END AS src,
           CASE WHEN i >= $7::bigint - ${OPEN_WINDOW} THEN
                  CASE WHEN i % 100 = 0 THEN '{requested,none}'::text[]
                       WHEN i % 100 = 1 THEN '{opened,attached}'::text[]
                       WHEN i % 100 < 30 THEN '{requested,none}'::text[]
                       WHEN i % 100 < 60 THEN '{opened,none}'::text[]
                       WHEN i % 100 < 70 THEN '{opened,attached}'::text[]
                       WHEN i % 100 < 75 THEN '{requested,attached}'::text[]
                       WHEN i % 100 < 95 THEN '{opened,verified}'::text[]
                       ELSE '{voided,none}'::text[] END
                WHEN i % 1000 < 620 THEN '{expired,none}'::text[]
                WHEN i % 1000 < 920 THEN '{opened,verified}'::text[]
                WHEN i % 1000 < 960 THEN '{voided,none}'::text[]
                WHEN i % 1000 < 980 THEN '{requested,verified}'::text[]
                ELSE '{expired,attached}'::text[] END AS st
         FROM generate_series($6::bigint, $7::bigint - 1) AS i
       ) g
     ) r`,
    [s.partnerId, s.merchantId, planId, token, recipient, from, to],
  );
  await db.query(`SET session_replication_role = origin`);
  await db.query(`VACUUM ANALYZE payment_requests`);
}

/** A plan row for the seeded charges (canceled: the scheduler never touches it). */
async function insertPlan(db: Client, s: Seeded): Promise<string> {
  const r = await db.query<{ id: string }>(
    `INSERT INTO plans (id, partner_id, merchant_id, test_mode, token, title, fiat_amount, fiat_currency, "interval",
       interval_count, start_at, expiry_minutes, status)
     VALUES (gen_random_uuid(), $1, $2, true, md5(random()::text) || md5(random()::text), 'Bench plan', 100, 'usd', 'day',
       1, now(), 60, 'canceled') RETURNING id`,
    [s.partnerId, s.merchantId],
  );
  return r.rows[0].id;
}

async function signIn(svc: SpawnedService, s: Seeded): Promise<string> {
  const nonce = await call(svc.publicUrl, 'GET', '/dashboard/api/nonce');
  if (nonce.status !== 200) throw new Error(`dashboard nonce: ${nonce.status} ${nonce.text}`);
  const message = new SiweMessage({
    domain: new URL(svc.publicUrl).host,
    address: s.wallet.address,
    statement: 'Sign in to your dashboard.',
    uri: `${svc.publicUrl}/dashboard`,
    version: '1',
    chainId: 31337,
    nonce: nonce.body.nonce,
    issuedAt: new Date().toISOString(),
  }).prepareMessage();
  const res = await fetch(`${svc.publicUrl}/dashboard/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature: await s.wallet.signMessage(message) }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`dashboard sign-in: ${res.status} ${text}`);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('prs_dashboard='));
  if (!cookie) throw new Error('dashboard sign-in set no session cookie');
  return cookie.split(';')[0];
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * The statements the repository sends for this filter (captured, not run): the page's query, and before it,
 * for a `since` page, the horizon statement (answered here with the current time).
 */
async function builtSql(s: Seeded, f: Case['filter']): Promise<Array<{ sql: string; params: unknown[] }>> {
  const captured: Array<{ sql: string; params: unknown[] }> = [];
  const client = {
    query: async ({ text, values }: { text: string; values: unknown[] }) => {
      captured.push({ sql: text, params: values });
      return { rows: [{ horizon: new Date().toISOString() }] };
    },
  };
  const fake = {
    manager: { queryRunner: { connect: async () => client } },
    query: async (sql: string, params: unknown[]) => (captured.push({ sql, params }), []),
  };
  await new RequestsRepository(fake as never).list({ ...f, partnerId: s.partnerId, testMode: true, limit: 50, offset: 0 });
  if (!captured.length) throw new Error('the repository built no query');
  return captured;
}

/** The server-side time of a page: the EXPLAIN ANALYZE execution time (median of EXPLAIN_RUNS) of each statement, summed. */
async function serverMs(db: Client, s: Seeded, f: Case['filter']): Promise<number> {
  let total = 0;
  for (const { sql, params } of await builtSql(s, f)) {
    const times: number[] = [];
    for (let i = 0; i < EXPLAIN_RUNS; i++) {
      const r = await db.query<{ 'QUERY PLAN': Array<{ 'Execution Time': number }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      times.push(r.rows[0]['QUERY PLAN'][0]['Execution Time']);
    }
    total += times.sort((a, b) => a - b)[EXPLAIN_RUNS >> 1];
  }
  return total;
}

interface Row {
  filter: string;
  size: string;
  returned: number;
  p50: number;
  p99: number;
  serverMs: number;
}

/** One size under test: its database, its service and what was seeded in it. */
interface Target {
  name: string;
  rows: number;
  url: string;
  svc: SpawnedService;
  s: Seeded;
  planId: string;
  cookie: string;
  /** For seeding and EXPLAIN, connected as the service connects. */
  db: Client;
}

interface Timed {
  p50: number;
  p99: number;
  returned: number;
}

/**
 * Times one filter (perTarget: its case on each target) on every size at once: WARMUP then n rounds, each round one request to each size in turn
 * (smallest first), one in flight at a time, so a burst of load on the machine lands on every size alike.
 */
async function timeInterleaved(targets: Target[], perTarget: Case[], n: number): Promise<Timed[]> {
  const plans = targets.map((t, i) => {
    const c = perTarget[i];
    return {
      name: c.name,
      url: c.dashboard ? `${t.svc.publicUrl}/dashboard/api/requests?${query(c)}` : `${t.svc.publicUrl}/api/v1/requests?${query(c)}`,
      headers: (c.dashboard ? { cookie: t.cookie } : { authorization: `Bearer ${t.s.apiKey}` }) as Record<string, string>,
      times: [] as number[],
      returned: 0,
    };
  });
  for (let i = 0; i < WARMUP + n; i++) {
    for (const p of plans) {
      const t = process.hrtime.bigint();
      const res = await fetch(p.url, { headers: p.headers });
      const body = (await res.json()) as { requests?: unknown[] };
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (res.status !== 200) throw new Error(`${p.name}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      p.returned = body.requests?.length ?? 0;
      if (i >= WARMUP) p.times.push(ms);
    }
  }
  return plans.map((p) => {
    const sorted = p.times.sort((x, y) => x - y);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), returned: p.returned };
  });
}

const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));

function table(rows: Row[], sizeNames: string[]): string {
  const names = [...new Set(rows.map((r) => r.filter))];
  const head = ['filter', ...sizeNames.flatMap((z) => [`${z} p50`, `${z} p99`, `${z} srv`]), ...(sizeNames.length > 1 ? [`p99 ${sizeNames[sizeNames.length - 1]}/${sizeNames[0]}`] : [])];
  const lines = [head];
  for (const name of names) {
    const cells = [name];
    const bySize = sizeNames.map((z) => rows.find((r) => r.filter === name && r.size === z));
    for (const r of bySize) cells.push(r ? fmt(r.p50) : '-', r ? fmt(r.p99) : '-', r ? fmt(r.serverMs) : '-');
    if (sizeNames.length > 1 && bySize[0] && bySize[bySize.length - 1]) cells.push((bySize[bySize.length - 1]!.p99 / bySize[0]!.p99).toFixed(2));
    lines.push(cells);
  }
  const widths = head.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return lines.map((l) => l.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n');
}

/** What a reused database needs besides its rows: who owns them (bench_lists_seed, one row). */
interface Stored {
  s: Seeded;
  planId: string;
  seeded: number;
}

async function databaseExists(url: string): Promise<boolean> {
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.replace(/^\//, ''));
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

async function readStored(db: Client): Promise<Stored | null> {
  if (!(await db.query(`SELECT to_regclass('bench_lists_seed') IS NOT NULL AS present`)).rows[0].present) return null;
  const r = await db.query<{ partner_id: string; api_key: string; merchant_id: string; wallet_key: string; plan_id: string; seeded: string }>(
    'SELECT * FROM bench_lists_seed',
  );
  if (r.rowCount !== 1) return null;
  const row = r.rows[0];
  const s = { partnerId: row.partner_id, apiKey: row.api_key, merchantId: row.merchant_id, wallet: new Wallet(row.wallet_key) };
  return { s, planId: row.plan_id, seeded: Number(row.seeded) };
}

async function writeStored(db: Client, st: Stored, walletKey: string): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS bench_lists_seed (partner_id uuid, api_key text, merchant_id uuid,
    wallet_key text, plan_id uuid, seeded bigint)`);
  await db.query('DELETE FROM bench_lists_seed');
  await db.query('INSERT INTO bench_lists_seed VALUES ($1, $2, $3, $4, $5, $6)', [
    st.s.partnerId, st.s.apiKey, st.s.merchantId, walletKey, st.planId, st.seeded,
  ]);
}

/** Size z's database: `{size}` in the URL replaced, else `_<size>` appended to the database name. */
function databaseUrl(base: string, z: string): string {
  if (base.includes('{size}')) return base.split('{size}').join(z);
  const u = new URL(base);
  u.pathname = `${u.pathname.replace(/\/$/, '')}_${z}`;
  return u.toString();
}

const databaseNameOf = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/** Resident memory of a process in MB (Linux /proc), for the log: several services and a chain share the box. */
function rssMb(pid: number | undefined): string {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return `${Math.round(kb / 1024)} MB`;
  } catch {
    return '?';
  }
}

const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');

/** Readies size z's database: reused as it is (BENCH_LISTS_REUSE=1 and seeded before), else dropped; migrated. */
async function prepare(z: string, url: string, reuse: boolean): Promise<Stored | null> {
  let stored: Stored | null = null;
  if (reuse && (await databaseExists(url))) {
    const probe = new Client({ connectionString: url });
    await probe.connect();
    stored = await readStored(probe).finally(() => probe.end());
  }
  if (stored) {
    if (stored.seeded > SIZES[z]) throw new Error(`BENCH_LISTS_REUSE: ${databaseNameOf(url)} holds ${stored.seeded} rows, more than ${z}`);
    log(`${z}: reusing ${databaseNameOf(url)}, ${stored.seeded} seeded rows`);
  } else {
    await dropDatabase(url);
  }
  await migrate(url);
  return stored;
}

async function main(): Promise<void> {
  const sizeNames = sizes();
  const n = requestsPerFilter();
  const base = process.env.BENCH_LISTS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench_lists_{size}';
  const urls = new Map(sizeNames.map((z) => [z, databaseUrl(base, z)] as const));
  if (new Set(urls.values()).size !== urls.size) throw new Error('BENCH_LISTS_DATABASE_URL gives two sizes the same database');
  const reuse = process.env.BENCH_LISTS_REUSE === '1';
  const storing = reuse || process.env.BENCH_LISTS_KEEP === '1';
  log(`databases ${[...urls.values()].map(databaseNameOf).join(', ')}, ${n} requests per filter and size, interleaved (machine load ${load()})`);
  // Registered first, so it runs last: after every service has stopped, on success, failure or Ctrl-C alike.
  if (!storing) onCleanup('bench databases', async () => { for (const url of urls.values()) await dropDatabase(url); });

  const stored = new Map<string, Stored | null>();
  for (const z of sizeNames) stored.set(z, await prepare(z, urls.get(z)!, reuse));
  const chain = await startChain();
  const services = await Promise.all(sizeNames.map((z) => startService({ databaseUrl: urls.get(z)!, chain, name: `service-${z}` })));
  log(`services up: ${sizeNames.map((z, i) => `${z} ${rssMb(services[i].child.proc.pid)}`).join(', ')}; ${Math.round(os.freemem() / 2 ** 20)} MB free`);

  const targets: Target[] = [];
  try {
    for (const [i, z] of sizeNames.entries()) {
      const url = urls.get(z)!;
      const svc = services[i];
      const st = stored.get(z) ?? null;
      const db = new Client({ connectionString: url, options: '-c jit=off -c max_parallel_workers_per_gather=0' }); // as the service connects
      await db.connect();
      const fresh = st ? null : await seed(svc);
      const s: Seeded = st?.s ?? fresh!;
      const planId = st?.planId ?? (await insertPlan(db, s));
      targets.push({ name: z, rows: SIZES[z], url, svc, s, planId, cookie: await signIn(svc, s), db });
      let seeded = st?.seeded ?? 0;
      if (!st && storing) await writeStored(db, { s, planId, seeded }, (fresh!.wallet as Wallet).privateKey);
      if (SIZES[z] > seeded) {
        const t = Date.now();
        await grow(db, s, planId, s.wallet.address.toLowerCase(), chain.token.toLowerCase(), seeded, SIZES[z]);
        seeded = SIZES[z];
        if (storing) await db.query('UPDATE bench_lists_seed SET seeded = $1', [seeded]);
        log(`${z}: seeded ${databaseNameOf(url)} to ${seeded} rows in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      }
    }
  } catch (e) {
    await Promise.all(targets.map((t) => t.db.end()));
    throw e;
  }

  const rows: Row[] = [];
  const loads: number[] = [os.loadavg()[0]];
  log(`timing, interleaved over ${sizeNames.join(', ')} (machine load ${load()})`);
  try {
    const byTarget = targets.map((t) => cases(t.s, t.planId, t.rows));
    for (const [k, c] of byTarget[0].entries()) {
      const timed = await timeInterleaved(targets, byTarget.map((cs) => cs[k]), n);
      const parts: string[] = [];
      for (const [i, t] of targets.entries()) {
        const srv = await serverMs(t.db, t.s, byTarget[i][k].filter);
        rows.push({ filter: c.name, size: t.name, returned: timed[i].returned, p50: timed[i].p50, p99: timed[i].p99, serverMs: srv });
        parts.push(`${t.name} ${fmt(timed[i].p50)} / ${fmt(timed[i].p99)} ms (server ${fmt(srv)}, ${timed[i].returned} rows)`);
      }
      loads.push(os.loadavg()[0]);
      log(`${c.name}: p50 / p99 ${parts.join('; ')}`);
    }
  } finally {
    await Promise.all(targets.map((t) => t.db.end()));
  }
  const loadRange = `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`;
  log(`timing done; 1-minute load average during it ${loadRange} (now ${load()}); memory: ${sizeNames.map((z, i) => `${z} ${rssMb(services[i].child.proc.pid)}`).join(', ')}, ${Math.round(os.freemem() / 2 ** 20)} MB free`);
  console.log(`\nHTTP ms (p50, p99; sizes interleaved) and server-side EXPLAIN ANALYZE execution ms, page of 50:\n${table(rows, sizeNames)}`);
  const first = sizeNames[0];
  const last = sizeNames[sizeNames.length - 1];
  const misses = [...new Set(rows.map((r) => r.filter))].filter((name) => {
    const a = rows.find((r) => r.filter === name && r.size === first)!;
    const b = rows.find((r) => r.filter === name && r.size === last)!;
    return (sizeNames.length > 1 && b.p99 > 2 * a.p99) || b.serverMs >= 20;
  });
  log(misses.length ? `goal missed (p99 ${last} > 2× p99 ${first}, or server ≥ 20 ms): ${misses.join('; ')}` : 'goal met for every filter');
  mkdirSync(path.dirname(RESULT_FILE), { recursive: true });
  const result = { at: new Date().toISOString(), method: 'interleaved', loadavg: os.loadavg(), load1During: loads, requestsPerFilter: n, databases: Object.fromEntries([...urls].map(([z, u]) => [z, databaseNameOf(u)])), rows };
  writeFileSync(RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  log(`result written to ${path.relative(process.cwd(), RESULT_FILE)}`);
  await Promise.all(services.map((svc) => svc.child.stop()));
  if (storing) log(`kept ${[...urls.values()].map(databaseNameOf).join(', ')} (BENCH_LISTS_REUSE=1 starts from them)`);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n[bench:lists] ${signal}: stopping every child process`);
    void cleanup().then(() => process.exit(130));
  });
}

main()
  .catch((e: Error) => {
    console.error(`\n[bench:lists] FAILED: ${e.stack ?? e.message}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    process.exit(interrupted ? 130 : process.exitCode ?? 0);
  });
