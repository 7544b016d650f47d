/**
 * `npm run bench:wire`: what one create and one get cost on the wire. The spawned service (API role, as in
 * `npm run bench`) reaches Postgres and Redis through counting TCP proxies; after a warm-up, BENCH_WIRE_N
 * creates (default 500) and as many gets run, first one at a time, then 50 in parallel, and the report gives
 * per request: Postgres round trips (ReadyForQuery), statements by command tag, protocol messages,
 * bytes and socket writes each way, the CPU of the service's Postgres backends (read from /proc: the
 * database must run on this machine), and Redis commands and socket writes. The statement texts seen
 * (simple queries and Parse messages) are listed with their counts.
 *
 * The proxies (on 127.0.0.1, where the bench's Postgres and Redis run) parse only message boundaries of the
 * Postgres protocol (a type byte and a length after the untyped startup message, no TLS) and the request
 * arrays of RESP. BENCH_DATABASE_URL names the scratch database (default prs_bench_wire, recreated and
 * migrated).
 */
import { Client } from 'pg';
import { TcpProxy } from '../test/support/tcp-proxy';
import { cleanup } from './children';
import { dropDatabase, migrate } from './database';
import { cpuMs, keyMaker, randomFiat } from './load';
import { call, inParallel, seed } from './seed';
import { benchRedisUrl, startChain, startService } from './service';

class Tally {
  counts = new Map<string, number>();
  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  reset(): void {
    this.counts.clear();
  }
  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }
}

/** Splits a Postgres protocol stream into messages; `untypedFirst` for the client's startup message. */
function pgSplitter(untypedFirst: boolean, onMessage: (type: string, body: Buffer) => void): (chunk: Buffer) => void {
  let buf: Buffer = Buffer.alloc(0);
  let first = untypedFirst;
  return (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (first) {
        if (buf.length < 4) return;
        const len = buf.readInt32BE(0);
        if (buf.length < len) return;
        onMessage('startup', buf.subarray(4, len));
        buf = buf.subarray(len);
        first = false;
        continue;
      }
      if (buf.length < 5) return;
      const len = buf.readInt32BE(1);
      if (buf.length < 1 + len) return;
      onMessage(String.fromCharCode(buf[0]), buf.subarray(5, 1 + len));
      buf = buf.subarray(1 + len);
    }
  };
}

/** Counts RESP requests (arrays of bulk strings) by command name. */
function respSplitter(onCommand: (name: string) => void): (chunk: Buffer) => void {
  let text = '';
  return (chunk) => {
    text += chunk.toString('latin1');
    for (;;) {
      if (!text.startsWith('*')) {
        // Inline command (not sent by ioredis): skip a line.
        const nl = text.indexOf('\r\n');
        if (nl < 0) return;
        text = text.slice(nl + 2);
        continue;
      }
      let pos = text.indexOf('\r\n');
      if (pos < 0) return;
      const n = Number(text.slice(1, pos));
      pos += 2;
      let name = '';
      let complete = true;
      for (let i = 0; i < n; i++) {
        const nl = text.indexOf('\r\n', pos);
        if (nl < 0) { complete = false; break; }
        const len = Number(text.slice(pos + 1, nl));
        if (text.length < nl + 2 + len + 2) { complete = false; break; }
        if (i === 0) name = text.slice(nl + 2, nl + 2 + len).toUpperCase();
        pos = nl + 2 + len + 2;
      }
      if (!complete) return;
      onCommand(name);
      text = text.slice(pos);
    }
  };
}

/** A loopback proxy (test/support/tcp-proxy.ts) that tallies what passes, by a protocol parser per direction. */
class CountingProxy {
  readonly tally = new Tally();
  readonly statements = new Tally();
  private readonly proxy: TcpProxy;

  constructor(targetPort: number, protocol: 'pg' | 'redis') {
    this.proxy = new TcpProxy(targetPort, (client, upstream) => {
      const t = this.tally;
      let toServer: (c: Buffer) => void;
      let toClient: (c: Buffer) => void;
      if (protocol === 'pg') {
        toServer = pgSplitter(true, (type, body) => {
          t.add(`client msg ${type}`);
          if (type === 'Q') this.statements.add(`Q ${cstring(body, 0)}`);
          if (type === 'P') {
            const name = cstring(body, 0);
            this.statements.add(`P${name ? ` [${name}]` : ''} ${cstring(body, Buffer.byteLength(name) + 1)}`);
          }
        });
        toClient = pgSplitter(false, (type, body) => {
          t.add(`server msg ${type}`);
          if (type === 'Z') t.add('round trips');
          if (type === 'C') t.add(`tag ${cstring(body, 0).split(' ')[0]}`);
        });
      } else {
        toServer = respSplitter((name) => t.add(`command ${name}`));
        toClient = () => undefined;
      }
      client.on('data', (c: Buffer) => {
        t.add('bytes to server', c.length);
        t.add('writes to server');
        toServer(c);
      });
      upstream.on('data', (c: Buffer) => {
        t.add('bytes to client', c.length);
        t.add('writes to client');
        toClient(c);
      });
    });
  }

  get port(): number {
    return this.proxy.port;
  }

  start(): Promise<void> {
    return this.proxy.start();
  }

  reset(): void {
    this.tally.reset();
    this.statements.reset();
  }

  stop(): Promise<void> {
    return this.proxy.stop();
  }
}

function cstring(b: Buffer, at: number): string {
  const end = b.indexOf(0, at);
  return b.toString('utf8', at, end < 0 ? b.length : end).replace(/\s+/g, ' ').trim();
}

function withHostPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

interface Phase {
  label: string;
  n: number;
  pg: Map<string, number>;
  /** CPU of the service's Postgres backends (same machine), ms. */
  pgCpuMs: number;
  pgStatements: Map<string, number>;
  redis: Map<string, number>;
}

async function main(): Promise<void> {
  const n = Number(process.env.BENCH_WIRE_N ?? 500);
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench_wire';
  const db = new URL(databaseUrl);
  const redisUrl = new URL(benchRedisUrl());
  const pgProxy = new CountingProxy(Number(db.port || 5432), 'pg');
  const redisProxy = new CountingProxy(Number(redisUrl.port || 6379), 'redis');
  await pgProxy.start();
  await redisProxy.start();

  await dropDatabase(databaseUrl);
  await migrate(databaseUrl);
  const chain = await startChain();
  process.env.BENCH_REDIS_URL = withHostPort(benchRedisUrl(), redisProxy.port);
  const service = await startService({ databaseUrl: withHostPort(databaseUrl, pgProxy.port), chain });
  const seeded = await seed(service);
  const key = keyMaker();
  const ids: string[] = [];
  const create = async () => {
    const r = await call(service.publicUrl, 'POST', '/api/v1/requests/create', {
      key: seeded.apiKey,
      body: { account_id: seeded.merchantId, fiat_amount_int: randomFiat(), idempotency_key: key() },
    });
    if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
    ids.push(r.body.request_id as string);
  };
  const get = async (i: number) => {
    const r = await call(service.publicUrl, 'GET', `/api/v1/requests/${ids[i % ids.length]}`, { key: seeded.apiKey });
    if (r.status !== 200) throw new Error(`get: ${r.status} ${r.text}`);
  };

  // Warm-up: pools filled, caches (API key, merchant) loaded, statements prepared where the code prepares.
  await inParallel(200, 50, create);
  await inParallel(200, 50, get);
  await new Promise((r) => setTimeout(r, 500));

  // The service's backends: every connection to the database but this one (which is not through the proxy).
  const observer = new Client({ connectionString: databaseUrl });
  await observer.connect();
  const backendsCpu = async () => {
    const { rows } = await observer.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return new Map(rows.map((r) => [r.pid, cpuMs(r.pid) ?? 0]));
  };
  // Backends come and go with the pool (idle timeout): a new one counts from zero, one that ended is left out.
  const cpuSince = (before: Map<number, number>, after: Map<number, number>) =>
    [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
  const phases: Phase[] = [];
  const measure = async (label: string, count: number, fn: () => Promise<unknown>) => {
    pgProxy.reset();
    redisProxy.reset();
    const cpuBefore = await backendsCpu();
    await fn();
    // Let the micro-batched after-commit work (expiry jobs) reach Redis.
    await new Promise((r) => setTimeout(r, 300));
    const pgCpuMs = cpuSince(cpuBefore, await backendsCpu());
    phases.push({ label, n: count, pg: pgProxy.tally.snapshot(), pgCpuMs, pgStatements: pgProxy.statements.snapshot(), redis: redisProxy.tally.snapshot() });
  };
  await measure('idle 1 s', 1, () => new Promise((r) => setTimeout(r, 700)));
  await measure('create ×1', n, () => inParallel(n, 1, create));
  await measure('create ×50', n, () => inParallel(n, 50, create));
  await measure('get ×1', n, () => inParallel(n, 1, (i) => get(i)));
  await measure('get ×50', n, () => inParallel(n, 50, (i) => get(i)));

  const keys = (pick: (p: Phase) => Map<string, number>) =>
    [...new Set(phases.flatMap((p) => [...pick(p).keys()]))].sort();
  const row = (name: string, values: string[]) => console.log(`${name.padEnd(28)}${values.map((v) => v.padStart(12)).join('')}`);
  console.log(`\nper request (idle: per second of idle, not per request); n = ${n}`);
  row('', phases.map((p) => p.label));
  row('pg backend cpu ms', phases.map((p) => (p.pgCpuMs / p.n).toFixed(3)));
  for (const kk of keys((p) => p.pg)) row(`pg ${kk}`, phases.map((p) => ((p.pg.get(kk) ?? 0) / p.n).toFixed(2)));
  for (const kk of keys((p) => p.redis)) row(`redis ${kk}`, phases.map((p) => ((p.redis.get(kk) ?? 0) / p.n).toFixed(2)));
  for (const p of phases.slice(1)) {
    console.log(`\nstatements sent during ${p.label} (count per request):`);
    for (const [text, c] of [...p.pgStatements].sort((a, b) => b[1] - a[1])) console.log(`  ${(c / p.n).toFixed(2).padStart(6)}  ${text.slice(0, 200)}`);
  }

  await observer.end();
  await service.child.stop();
  await pgProxy.stop();
  await redisProxy.stop();
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => void cleanup().then(() => process.exit()));
