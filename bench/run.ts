/**
 * `npm run bench`: the partner API's two hot paths against a bare Node http + pg baseline measured in the
 * same run (PERFORMANCE.md's method): autocannon, 50 connections, 2 s warm-up then BENCH_DURATION s
 * (default 10) per case, service and bare interleaved within each of BENCH_REPS repetitions (default 3), and
 * the median of the per-repetition ratios against the targets of issue 2 (create ≥ 0.4 of the bare insert,
 * get ≥ 0.5 of the bare select, p99 < 100 ms).
 *
 * The service runs as its own process, as in production: either one already running (BENCH_URL and
 * BENCH_ADMIN_URL, with BENCH_ADMIN_TOKEN) or, by default, one this bench spawns with the API role on the
 * dedicated database prs_bench (recreated and migrated), Redis prefix prs-bench, rate limits raised by
 * RATE_LIMIT_SCALE and a local Hardhat chain with the test token. The bare server is always a child of the
 * bench. Every child is ended on exit, on error and on Ctrl-C.
 *
 * Also: BENCH_DATABASE_URL (the bench database), BENCH_REDIS_URL, BENCH_PROFILE=1 (CPU profile of the spawned
 * service, summarised at the end), BENCH_VERBOSE=1 (echo the service's output), BENCH_FROM_SOURCE=1 (ignore dist/).
 * The result is written to .tmp/bench-result.json. Exit code 1 when a measured window saw errors or non-2xx.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Child, cleanup, startNode } from './children';
import { type BareFixture, benchDatabaseUrl, dropDatabase, migrate, prepareBareTable, ROOT, rowCounts, SWC } from './database';
import { type CaseResult, CONNECTIONS, createPlan, getPlan, keyMaker, randomFiat, runCase, stopLoad, WARMUP_SECONDS } from './load';
import { summariseProfiles } from './profile';
import { call, inParallel, seed, type Target } from './seed';
import { type Chain, type SpawnedService, startChain, startService, waitForAnswer } from './service';

const TARGETS = { create: 0.4, get: 0.5, p99Ms: 100 };
const ID_POOL = 1000;
const RESULT_FILE = path.join(ROOT, '.tmp', 'bench-result.json');

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

const log = (msg: string) => console.log(`[bench] ${msg}`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function startBare(databaseUrl: string, f: BareFixture, tokenAddress: string): Promise<{ child: Child; url: string }> {
  const child = startNode('bare server', [...SWC, 'bench/bare-server.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      BARE_DATABASE_URL: databaseUrl,
      BARE_PARTNER_ID: f.partnerId,
      BARE_MERCHANT_ID: f.merchantId,
      BARE_RECIPIENT: f.recipient,
      BARE_TOKEN_ADDRESS: tokenAddress,
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.proc.once('message', (m: { port?: number }) => (m.port ? resolve(m.port) : reject(new Error('bare server sent no port'))));
    void child.exited.then((how) => reject(new Error(`bare server exited (${how}):\n${child.tail()}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForAnswer(child, url, 10_000);
  return { child, url };
}

interface WebhookOutcome {
  ran: boolean;
  ratio?: number;
  result?: unknown;
  error?: string;
}

/** bench/webhooks.ts belongs to the webhooks work; it is called when present and its ratio printed. */
async function maybeBenchWebhooks(context: Record<string, unknown>): Promise<WebhookOutcome> {
  const file = ['webhooks.ts', 'webhooks.js'].map((f) => path.join(__dirname, f)).find((f) => existsSync(f));
  if (!file) return { ran: false };
  const mod = require(file) as { benchWebhooks?: (ctx: Record<string, unknown>) => Promise<unknown> };
  if (typeof mod.benchWebhooks !== 'function') return { ran: false, error: `${path.basename(file)} exports no benchWebhooks()` };
  try {
    const result = await mod.benchWebhooks(context);
    const ratio = typeof result === 'number' ? result : (result as { ratio?: unknown } | null)?.ratio;
    return { ran: true, ratio: typeof ratio === 'number' ? ratio : undefined, result };
  } catch (e) {
    return { ran: true, error: (e as Error).stack ?? String(e) };
  }
}

function pad(s: string | number, n: number, right = false): string {
  const t = String(s);
  return right ? t.padEnd(n) : t.padStart(n);
}

async function main(): Promise<void> {
  const duration = intEnv('BENCH_DURATION', 10);
  const reps = intEnv('BENCH_REPS', 3);
  const verbose = process.env.BENCH_VERBOSE === '1';
  const profile = process.env.BENCH_PROFILE === '1';
  const databaseUrl = benchDatabaseUrl();
  const external = Boolean(process.env.BENCH_URL && process.env.BENCH_ADMIN_URL);
  log(`${reps} repetition(s) × 4 cases × (${WARMUP_SECONDS} s warm-up + ${duration} s), ${CONNECTIONS} connections; ` +
    `${os.cpus().length} cores, Node ${process.version}`);

  let target: Target;
  let spawned: SpawnedService | null = null;
  let chain: Chain | null = null;
  let tokenAddress: string;
  const profileDir = path.join(ROOT, '.tmp', 'bench-profile', String(Date.now()));
  if (external) {
    target = {
      publicUrl: process.env.BENCH_URL!.replace(/\/+$/, ''),
      adminUrl: process.env.BENCH_ADMIN_URL!.replace(/\/+$/, ''),
      adminToken: process.env.BENCH_ADMIN_TOKEN ?? 'dev-admin-token',
    };
    log(`target: running service ${target.publicUrl} (admin ${target.adminUrl}); bare baseline on ${databaseUrl}`);
    await migrate(databaseUrl);
    tokenAddress = `0x${'5a'.repeat(20)}`;
  } else {
    log(`database ${databaseUrl}: recreating and migrating`);
    await dropDatabase(databaseUrl);
    await migrate(databaseUrl);
    log('local chain: starting Hardhat and deploying the token');
    chain = await startChain();
    tokenAddress = chain.token;
    spawned = await startService({
      databaseUrl,
      chain,
      verbose,
      nodeFlags: profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    target = spawned;
    log(`service: ${spawned.command} (pid ${spawned.child.proc.pid}) on ${spawned.publicUrl}, admin ${spawned.adminUrl}`);
  }

  const fixture = await prepareBareTable(databaseUrl);
  const bare = await startBare(databaseUrl, fixture, tokenAddress);
  log(`bare baseline: node http + pg (pool 20) on ${bare.url}, table bench_bare_requests`);

  const seeded = await seed(target);
  log(`seeded partner ${seeded.partnerId}, test key, onboarded merchant ${seeded.merchantId} (admin + partner + SIWE onboarding APIs)`);

  const auth = { authorization: `Bearer ${seeded.apiKey}` };
  const poolKey = keyMaker();
  const serviceIds = await inParallel(ID_POOL, 25, async () => {
    const r = await call(target.publicUrl, 'POST', '/api/v1/requests/create', {
      key: seeded.apiKey,
      body: { account_id: seeded.merchantId, fiat_amount_int: randomFiat(), idempotency_key: poolKey() },
    });
    if (r.status !== 201) throw new Error(`pool create failed: ${r.status} ${r.text}`);
    return r.body.request_id as string;
  });
  const bareIds = await inParallel(ID_POOL, 25, async () => {
    const r = await call(bare.url, 'POST', '/', {
      body: { account_id: fixture.merchantId, fiat_amount_int: randomFiat(), idempotency_key: poolKey() },
    });
    if (r.status !== 201) throw new Error(`bare pool insert failed: ${r.status} ${r.text}`);
    return r.body.id as string;
  });
  log(`id pools: ${serviceIds.length} service requests, ${bareIds.length} bare rows`);

  const plans = {
    create: () => ({ url: target.publicUrl, plan: createPlan('/api/v1/requests/create', seeded.merchantId, auth) }),
    'bare-insert': () => ({ url: bare.url, plan: createPlan('/', fixture.merchantId, {}) }),
    get: () => ({ url: target.publicUrl, plan: getPlan((id) => `/api/v1/requests/${id}`, serviceIds, auth) }),
    'bare-select': () => ({ url: bare.url, plan: getPlan((id) => `/${id}`, bareIds, {}) }),
  } as const;
  type CaseName = keyof typeof plans;

  const runs: CaseResult[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    // Service and bare alternate within the repetition; every other repetition starts with the bare one, so
    // a drift over the run does not always favour the same side.
    const order: CaseName[] = rep % 2 === 1 ? ['create', 'bare-insert', 'get', 'bare-select'] : ['bare-insert', 'create', 'bare-select', 'get'];
    for (const name of order) {
      const { url, plan } = plans[name]();
      const r = await runCase(name, rep, url, plan, duration);
      runs.push(r);
      const bad = r.non2xx + r.errors + r.timeouts;
      log(`rep ${rep} ${pad(name, 12, true)} ${pad(r.rps.toFixed(0), 7)} req/s  p50 ${pad(r.p50, 4)} ms  p99 ${pad(r.p99, 4)} ms  ` +
        `non-2xx ${r.non2xx}  errors ${r.errors}  timeouts ${r.timeouts}${bad ? `  !!! ${JSON.stringify(r.statusCodes)}` : ''}` +
        `${r.warmupProblems ? `  (warm-up problems: ${r.warmupProblems})` : ''}`);
    }
  }

  const byName = (n: CaseName) => runs.filter((r) => r.name === n);
  const perRep = (a: CaseName, b: CaseName) =>
    Array.from({ length: reps }, (_, i) => byName(a)[i].rps / byName(b)[i].rps);
  const caseSummary = (n: CaseName) => {
    const rs = byName(n);
    return {
      rps: median(rs.map((r) => r.rps)),
      p99: median(rs.map((r) => r.p99)),
      p99Worst: Math.max(...rs.map((r) => r.p99)),
      non2xx: rs.reduce((s, r) => s + r.non2xx, 0),
      errors: rs.reduce((s, r) => s + r.errors + r.timeouts, 0),
      warmupProblems: rs.reduce((s, r) => s + r.warmupProblems, 0),
    };
  };
  const summary = Object.fromEntries((Object.keys(plans) as CaseName[]).map((n) => [n, caseSummary(n)])) as Record<CaseName, ReturnType<typeof caseSummary>>;
  const createRatios = perRep('create', 'bare-insert');
  const getRatios = perRep('get', 'bare-select');
  const ratios = {
    create: { perRep: createRatios, median: median(createRatios), target: TARGETS.create, pass: median(createRatios) >= TARGETS.create },
    get: { perRep: getRatios, median: median(getRatios), target: TARGETS.get, pass: median(getRatios) >= TARGETS.get },
  };
  const p99Pass = { create: summary.create.p99 < TARGETS.p99Ms, get: summary.get.p99 < TARGETS.p99Ms };
  const valid = runs.every((r) => r.non2xx + r.errors + r.timeouts === 0);

  const webhookContext = {
    publicUrl: target.publicUrl, adminUrl: target.adminUrl, adminToken: target.adminToken, apiKey: seeded.apiKey,
    partnerId: seeded.partnerId, merchantId: seeded.merchantId, databaseUrl, chain, duration, reps,
    connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS,
  };
  const webhooks = await maybeBenchWebhooks(webhookContext);

  const counts = external ? null : await rowCounts(databaseUrl).catch(() => null);

  // Report.
  const line = '─'.repeat(86);
  console.log(`\n${line}`);
  console.log(`${pad('case', 14, true)}${pad('req/s (median)', 16)}${pad('p99 ms (median)', 17)}${pad('p99 ms (worst)', 16)}${pad('non-2xx', 10)}${pad('errors', 9)}`);
  for (const n of Object.keys(plans) as CaseName[]) {
    const s = summary[n];
    console.log(`${pad(n, 14, true)}${pad(s.rps.toFixed(0), 16)}${pad(s.p99, 17)}${pad(s.p99Worst, 16)}${pad(s.non2xx, 10)}${pad(s.errors, 9)}`);
  }
  console.log(line);
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  console.log(`create / bare insert  median ${ratios.create.median.toFixed(2)}  (per rep ${fmt(createRatios)})  target ≥ ${TARGETS.create}  ${verdict(ratios.create.pass)}`);
  console.log(`get / bare select     median ${ratios.get.median.toFixed(2)}  (per rep ${fmt(getRatios)})  target ≥ ${TARGETS.get}  ${verdict(ratios.get.pass)}`);
  console.log(`p99 create ${summary.create.p99} ms, get ${summary.get.p99} ms   target < ${TARGETS.p99Ms} ms  ` +
    `${verdict(p99Pass.create && p99Pass.get)}`);
  if (webhooks.ran) {
    if (webhooks.error) console.log(`webhooks              FAILED: ${webhooks.error}`);
    else console.log(`webhooks              ratio ${webhooks.ratio?.toFixed(2) ?? '(none returned)'}  ${JSON.stringify(webhooks.result)}`);
  } else if (webhooks.error) {
    console.log(`webhooks              skipped: ${webhooks.error}`);
  }
  if (counts) console.log(`rows at the end: payment_requests ${counts.service}, bench_bare_requests ${counts.bare}`);
  console.log(line);
  if (!valid) {
    const bad = runs.filter((r) => r.non2xx + r.errors + r.timeouts > 0);
    console.log('\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!');
    console.log('!!! INVALID RUN: some measured windows saw non-2xx responses or errors; the figures');
    console.log('!!! above do not count. Affected:');
    for (const r of bad) console.log(`!!!   rep ${r.rep} ${r.name}: non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}, codes ${JSON.stringify(r.statusCodes)}`);
    console.log('!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n');
  }

  const result = {
    at: new Date().toISOString(),
    machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    settings: { connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS, durationSeconds: duration, repetitions: reps, idPool: ID_POOL },
    target: external ? { mode: 'external', publicUrl: target.publicUrl } : { mode: 'spawned', command: spawned!.command, databaseUrl },
    valid,
    targets: TARGETS,
    ratios,
    p99Pass,
    summary,
    runs,
    webhooks,
    rows: counts,
  };
  mkdirSync(path.dirname(RESULT_FILE), { recursive: true });
  writeFileSync(RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  log(`result written to ${path.relative(process.cwd(), RESULT_FILE)}`);

  if (profile && spawned) {
    await spawned.child.stop(); // SIGTERM: the service closes and node writes the profile on exit
    console.log(summariseProfiles(profileDir));
  }
  process.exitCode = valid ? 0 : 1;
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n[bench] ${signal}: stopping the load and every child process`);
    stopLoad();
    void cleanup().then(() => process.exit(130));
  });
}

main()
  .catch((e: Error) => {
    console.error(`\n[bench] FAILED: ${e.stack ?? e.message}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    // Nothing of ours is left running; do not wait for stray handles (autocannon timers, fetch sockets).
    process.exit(interrupted ? 130 : process.exitCode ?? 0);
  });
