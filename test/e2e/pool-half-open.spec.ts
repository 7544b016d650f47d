import { createServer, connect, type Server, type Socket } from 'node:net';
import { DataSource } from 'typeorm';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * A Postgres failover or a network partition leaves the pool's connections half-open: the old peer is gone
 * without a FIN or an RST, while a new connection reaches Postgres at once. The pool had no bound on a query
 * (no query_timeout, no keepalive): every call handed one of those connections hung until the kernel gave
 * the socket up (~15 min at tcp_retries2=15), and with the pool full of them every call failed on the 10 s
 * acquire timeout. Now a query unanswered after DATABASE_QUERY_TIMEOUT_MS (1 s here) closes its connection,
 * and the pool opens fresh ones (src/database/bounded-client.ts). The service reaches Postgres through a proxy
 * that can silently drop all traffic of the connections open at that moment.
 */
class BlackholeProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  port = 0;
  constructor(private readonly targetPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      const pair = { client, upstream, frozen: false };
      this.pairs.add(pair);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      // A frozen pair passes nothing on, its close neither: neither end learns that the other went away.
      client.on('error', drop).on('close', () => pair.frozen || drop());
      upstream.on('error', drop).on('close', () => pair.frozen || drop());
      client.on('data', (d: Buffer) => pair.frozen || upstream.write(d));
      upstream.on('data', (d: Buffer) => pair.frozen || client.write(d));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Every connection open now loses all its packets from now on, both ways (no FIN, no RST); new ones work. */
  freezeAll(): number {
    let n = 0;
    for (const p of this.pairs) if (!p.frozen) (p.frozen = true), n++;
    return n;
  }

  /** The same, for the one connection whose client end is `clientPort` (the pg socket's localPort). */
  freeze(clientPort: number): boolean {
    for (const p of this.pairs) if (p.client.remotePort === clientPort) return (p.frozen = true);
    return false;
  }

  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const QUERY_TIMEOUT_MS = 1000;
const POOL = 3;
let proxy: BlackholeProxy;
let svc: TestService;
let ds: DataSource;

beforeAll(async () => {
  const url = new URL(testEnv().databaseUrl);
  proxy = new BlackholeProxy(Number(url.port || 5432));
  await proxy.start();
  url.host = `127.0.0.1:${proxy.port}`;
  svc = await startService({
    worker: false,
    env: { DATABASE_URL: url.toString(), DATABASE_POOL_SIZE: String(POOL), DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS) },
  });
  ds = svc.app.get(DataSource);
}, 60_000);

afterAll(async () => {
  await closeSql();
  // Without the bound, the service's shutdown would wait on the dead connections: give it a few seconds.
  await Promise.race([svc?.close(), new Promise((r) => setTimeout(r, 5000).unref())]);
  await proxy?.stop();
});

/** `p`'s outcome, or "no answer" once `ms` passed without one. */
function within<T>(p: Promise<T>, ms: number): Promise<{ value?: T; error?: Error; hung?: true; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.then(
      (value) => ({ value, ms: Date.now() - started }),
      (error: Error) => ({ error, ms: Date.now() - started }),
    ),
    new Promise<{ hung: true; ms: number }>((r) => (timer = setTimeout(() => r({ hung: true, ms }), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Runs `n` statements at once on the app's pool, so that it holds `n` connections. */
async function fillPool(n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, () => ds.query('SELECT pg_sleep(0.05)')));
}

it('with every pooled connection half-open, calls answer within the bound and then succeed on fresh connections', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 1234 });
  await fillPool(POOL);
  expect(proxy.freezeAll()).toBeGreaterThanOrEqual(POOL);

  const get = () =>
    fetch(`${svc.publicUrl}/api/v1/requests/${r.request_id}`, { headers: { authorization: `Bearer ${p.testKey}` } }).then((res) => res.status);
  // Calls one after the other: each answers (a 500 while it meets a dead connection, well before the 10 s
  // acquire timeout), until one is served on a fresh connection.
  const seen: Array<number | string> = [];
  const frozeAt = Date.now();
  await waitFor(async () => {
    const got = await within(get(), 4 * QUERY_TIMEOUT_MS);
    seen.push(got.hung ? `no answer in ${got.ms} ms` : (got.value ?? got.error!.message));
    return got.value === 200;
  }, 20_000, 0).catch((e: Error) => {
    throw new Error(`${e.message}; calls after the freeze: ${JSON.stringify(seen)}`);
  });
  expect(seen.filter((s) => typeof s === 'string')).toEqual([]);
  expect(seen.filter((s) => s !== 500 && s !== 200)).toEqual([]);
  expect(Date.now() - frozeAt).toBeLessThan(POOL * QUERY_TIMEOUT_MS + 5000);
  // Every dead connection is gone: the whole pool serves again.
  await fillPool(POOL);
}, 60_000);

it('a transaction whose connection goes half-open fails with the timeout, and the pool serves again', async () => {
  let inside = false;
  const tx = ds.transaction(async (em) => {
    await em.query('SELECT 1');
    // Only this transaction's connection: the pool's other ones stay fine.
    const pg = (em.queryRunner as unknown as { databaseConnection: { connection: { stream: Socket } } }).databaseConnection;
    inside = proxy.freeze(pg.connection.stream.localPort!);
    await em.query('SELECT 2');
  });
  const got = await within(tx, 4 * QUERY_TIMEOUT_MS);
  expect(inside).toBe(true);
  expect(got.hung).toBeUndefined();
  expect(got.error?.message).toMatch(/did not answer within 1000 ms \(DATABASE_QUERY_TIMEOUT_MS\)/);
  // The failed transaction's connection is not handed out again: a burst the size of the pool all succeed.
  const again = await within(fillPool(POOL), 4 * QUERY_TIMEOUT_MS);
  expect(again.error ?? again.hung).toBeUndefined();
}, 30_000);

it('a statement past the bound on a live connection is cancelled on the server, and its transaction rolls back', async () => {
  const lock = 72707399;
  const tx = ds.transaction(async (em) => {
    await em.query('SELECT pg_advisory_xact_lock($1)', [lock]);
    await em.query('SELECT pg_sleep(60) /* pool-half-open */');
  });
  const got = await within(tx, 4 * QUERY_TIMEOUT_MS);
  expect(got.hung).toBeUndefined();
  expect(got.error?.message).toMatch(/DATABASE_QUERY_TIMEOUT_MS/);
  // The cancel reached the server: the sleep is not left running there, holding the transaction's lock.
  await waitFor(async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60) /* pool-half-open */%' AND pid <> pg_backend_pid()`)).length === 0, 5000, 50);
  await waitFor(async () => {
    // Taken and let go within the statement: a transaction-level lock in autocommit.
    const [{ free }] = await sql<{ free: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS free', [lock]);
    return free;
  }, 5000, 50);
}, 30_000);

it('bounds each statement, not the transaction: statements shorter than the bound keep their connection', async () => {
  const pids = await ds.transaction(async (em) => {
    const [{ pid: before }] = await em.query<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid');
    // Two statements of 0.6 s: 1.2 s in all, past the 1 s bound, each well within it.
    await em.query('SELECT pg_sleep(0.6)');
    await em.query('SELECT pg_sleep(0.6)');
    const [{ pid: after }] = await em.query<Array<{ pid: number }>>('SELECT pg_backend_pid() AS pid');
    return [before, after];
  });
  expect(pids[0]).toBe(pids[1]);
}, 30_000);
