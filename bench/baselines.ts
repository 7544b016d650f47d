/**
 * The two baselines every API bench measures against, both children of the bench: the bare server (node:http
 * + pg, bench/bare-server.ts, table bench_bare_requests) and the framework floor (empty NestJS handlers on
 * Express configured as the service configures it, bench/floor-server.ts, table bench_floor_requests). Both
 * run the same prepared INSERT for create and SELECT for get (bench/bare-sql.ts).
 */
import { type Child, startNode } from './children';
import { type BareFixture, prepareBareTable, ROOT, SWC } from './database';
import { randomFiat } from './load';
import { call, inParallel } from './seed';
import { waitForAnswer } from './service';

export type BaselineKind = 'bare' | 'floor';

export interface Baseline {
  kind: BaselineKind;
  child: Child;
  url: string;
  fixture: BareFixture;
}

const SERVERS: Record<BaselineKind, { script: string; table: string }> = {
  bare: { script: 'bench/bare-server.ts', table: 'bench_bare_requests' },
  floor: { script: 'bench/floor-server.ts', table: 'bench_floor_requests' },
};

/** Creates the baseline's table (empty) and fixture rows, starts its server and waits until it answers. */
/** `nodeFlags`: extra node flags for the server, e.g. --cpu-prof. */
export async function startBaseline(kind: BaselineKind, databaseUrl: string, tokenAddress: string, nodeFlags: string[] = []): Promise<Baseline> {
  const { script, table } = SERVERS[kind];
  const fixture = await prepareBareTable(databaseUrl, table);
  const child = startNode(`${kind} server`, [...nodeFlags, ...SWC, script], {
    cwd: ROOT,
    env: {
      ...process.env,
      BARE_DATABASE_URL: databaseUrl,
      BARE_TABLE: table,
      BARE_PARTNER_ID: fixture.partnerId,
      BARE_MERCHANT_ID: fixture.merchantId,
      BARE_RECIPIENT: fixture.recipient,
      BARE_TOKEN_ADDRESS: tokenAddress,
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.proc.once('message', (m: { port?: number }) => (m.port ? resolve(m.port) : reject(new Error(`${kind} server sent no port`))));
    void child.exited.then((how) => reject(new Error(`${kind} server exited (${how}):\n${child.tail()}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForAnswer(child, url, 30_000);
  return { kind, child, url, fixture };
}

/** `count` rows created through the baseline's POST, for its GET case to rotate through. */
export async function baselineIds(b: Baseline, count: number, nextKey: () => string): Promise<string[]> {
  return inParallel(count, 25, async () => {
    const r = await call(b.url, 'POST', '/', {
      body: { account_id: b.fixture.merchantId, fiat_amount_int: randomFiat(), idempotency_key: nextKey() },
    });
    if (r.status !== 201) throw new Error(`${b.kind} pool insert failed: ${r.status} ${r.text}`);
    return r.body.id as string;
  });
}
