/**
 * `npm run bench`: the partner API's two hot paths against a bare Node http + pg baseline measured in the
 * same run (PERFORMANCE.md's method): autocannon, 50 connections, 2 s warm-up then BENCH_DURATION s
 * (default 10) per case, service and bare interleaved within each of BENCH_REPS repetitions (default 3), and
 * the median of the per-repetition ratios against the targets of issue 2 (create ≥ 0.4 of the bare insert,
 * get ≥ 0.5 of the bare select, p99 < 100 ms). The framework's floor (bench/floor-server.ts: empty NestJS
 * handlers on Express configured as the service configures it, the bare statements) runs in the same
 * repetitions, and each hot path is also given as a ratio to that floor (issue 14: ≥ 0.8).
 *
 * The service runs as its own process, as in production: either one already running (BENCH_URL and
 * BENCH_ADMIN_URL, with BENCH_ADMIN_TOKEN) or, by default, one this bench spawns with the API role on the
 * dedicated database prs_bench (recreated and migrated), Redis prefix prs-bench, rate limits raised by
 * RATE_LIMIT_SCALE and a local Hardhat chain with the test token. The bare server is always a child of the
 * bench. Every child is ended on exit, on error and on Ctrl-C.
 *
 * Also: BENCH_DATABASE_URL (the bench database), BENCH_REDIS_URL, BENCH_PROFILE=1 (CPU profiles of the spawned
 * service and of the framework floor: the service's summarised at the end, then both side by side in µs per
 * request, sorted by what the service spends beyond the floor; BENCH_CASES=get or create alone keeps one path's
 * work apart), BENCH_NODE_FLAGS (node flags for the spawned service and the framework floor, e.g. --trace-gc, or
 * `-r ./bench/heap-sampling.js` for where they allocate: bench/heap-summary.js), BENCH_FROM_SOURCE=1 (ignore dist/), BENCH_CASES (default
 * create,get,webhooks), BENCH_WEBHOOK_PARTNERS (the webhook bench once per count listed, default 1,10: one
 * partner is held to 10 attempts in flight, ten fill the worker's 100; the bare loop runs 50 in flight, its fastest),
 * BENCH_WEBHOOK_RATE (events per second of each webhook bench's commit-to-receipt latency phase, default 1000;
 * 0 skips it),
 * BENCH_AMOUNTS (random, or sequential to avoid amount collisions). The children's
 * output goes to .tmp/bench-logs/, the result to .tmp/bench-result.json. Exit code 1 when a measured window
 * saw errors or non-2xx responses.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { baselineIds, startBaseline } from './baselines';
import { cleanup, LOG_DIR } from './children';
import { analyze, benchDatabaseUrl, dropDatabase, migrate, ROOT, rowCounts } from './database';
import { type CaseResult, CONNECTIONS, createPlan, fiatMaker, getPlan, keyMaker, randomFiat, runCase, stopLoad, WARMUP_SECONDS } from './load';
import { compareProfiles, summariseProfiles } from './profile';
import { call, inParallel, seed, type Target } from './seed';
import { type Chain, clearRedisPrefix, REDIS_PREFIX, type SpawnedService, startChain, startService } from './service';
import type { LatencyResult } from './webhooks';

const TARGETS = { create: 0.4, get: 0.5, floor: 0.8, p99Ms: 100 };
const ID_POOL = 1000;
const RESULT_FILE = path.join(ROOT, '.tmp', 'bench-result.json');

function intEnv(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  return intEnvValue(name, raw, min);
}

function intEnvValue(name: string, raw: string, min: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

const log = (msg: string) => console.log(`[bench] ${msg}`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
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
  const profile = process.env.BENCH_PROFILE === '1';
  const extraFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const databaseUrl = benchDatabaseUrl();
  const external = Boolean(process.env.BENCH_URL && process.env.BENCH_ADMIN_URL);
  log(`${reps} repetition(s) × 6 cases × (${WARMUP_SECONDS} s warm-up + ${duration} s), ${CONNECTIONS} connections; ` +
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
    const cleared = await clearRedisPrefix();
    if (cleared) log(`redis: deleted ${cleared} keys of earlier runs under ${REDIS_PREFIX}:`);
    log('local chain: starting Hardhat and deploying the token');
    chain = await startChain();
    tokenAddress = chain.token;
    spawned = await startService({
      databaseUrl,
      chain,
      nodeFlags: [
        ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
        ...extraFlags,
      ],
    });
    target = spawned;
    log(`service: ${spawned.command} (pid ${spawned.child.proc.pid}) on ${spawned.publicUrl}, admin ${spawned.adminUrl}; ` +
      `output in ${path.relative(process.cwd(), LOG_DIR)}/`);
  }

  const bare = await startBaseline('bare', databaseUrl, tokenAddress);
  log(`bare baseline: node http + pg (pool 20) on ${bare.url}, table ${bare.fixture.table}`);
  const floorProfileDir = path.join(profileDir, 'floor');
  const floor = await startBaseline('floor', databaseUrl, tokenAddress, [
    ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${floorProfileDir}`] : []),
    ...extraFlags,
  ]);
  log(`framework floor: empty NestJS handlers on Express as the service configures it, pg (pool 20) on ${floor.url}, table ${floor.fixture.table}`);

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
  const bareIds = await baselineIds(bare, ID_POOL, poolKey);
  const floorIds = await baselineIds(floor, ID_POOL, poolKey);
  log(`id pools: ${serviceIds.length} service requests, ${bareIds.length} bare rows, ${floorIds.length} floor rows`);
  // A production table has planner statistics; a table created a moment ago has none until autovacuum's next
  // round, and the planner's guesses for an "empty" table are not what production runs.
  const baselineTables = [bare.fixture.table, floor.fixture.table];
  await analyze(databaseUrl, external ? baselineTables : ['payment_requests', ...baselineTables]);
  const amounts = process.env.BENCH_AMOUNTS || 'random';
  // One generator per target for the whole run: a sequence must not restart at the next repetition.
  const serviceFiat = fiatMaker(amounts);
  const bareFiat = fiatMaker(amounts);
  const floorFiat = fiatMaker(amounts);

  const plans = {
    create: () => ({ url: target.publicUrl, pid: spawned?.child.proc.pid, plan: createPlan('/api/v1/requests/create', seeded.merchantId, auth, serviceFiat) }),
    'bare-insert': () => ({ url: bare.url, pid: bare.child.proc.pid, plan: createPlan('/', bare.fixture.merchantId, {}, bareFiat) }),
    'floor-insert': () => ({ url: floor.url, pid: floor.child.proc.pid, plan: createPlan('/', floor.fixture.merchantId, {}, floorFiat) }),
    get: () => ({ url: target.publicUrl, pid: spawned?.child.proc.pid, plan: getPlan((id) => `/api/v1/requests/${id}`, serviceIds, auth) }),
    'bare-select': () => ({ url: bare.url, pid: bare.child.proc.pid, plan: getPlan((id) => `/${id}`, bareIds, {}) }),
    'floor-select': () => ({ url: floor.url, pid: floor.child.proc.pid, plan: getPlan((id) => `/${id}`, floorIds, {}) }),
  } as const;
  type CaseName = keyof typeof plans;

  // BENCH_CASES picks pairs (and the webhooks bench) for a shorter diagnostic run; all of them by default.
  const PAIRS = {
    create: { service: 'create', bare: 'bare-insert', floor: 'floor-insert', target: TARGETS.create, label: 'create' },
    get: { service: 'get', bare: 'bare-select', floor: 'floor-select', target: TARGETS.get, label: 'get   ' },
  } as const satisfies Record<string, { service: CaseName; bare: CaseName; floor: CaseName; target: number; label: string }>;
  type PairName = keyof typeof PAIRS;
  const wanted = (process.env.BENCH_CASES || 'create,get,webhooks').split(',').map((c) => c.trim());
  for (const c of wanted) if (!(c in PAIRS) && c !== 'webhooks') throw new Error(`BENCH_CASES: unknown case "${c}" (create, get, webhooks)`);
  const pairs = (Object.keys(PAIRS) as PairName[]).filter((p) => wanted.includes(p));

  const runs: CaseResult[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    // Service, bare and floor interleave within the repetition; the order rotates by repetition, so a drift
    // over the run does not always favour the same one.
    const order: CaseName[] = pairs.flatMap((p) => {
      const three: CaseName[] = [PAIRS[p].service, PAIRS[p].bare, PAIRS[p].floor];
      const k = (rep - 1) % 3;
      return [...three.slice(k), ...three.slice(0, k)];
    });
    for (const name of order) {
      const { url, plan, pid } = plans[name]();
      const r = await runCase(name, rep, url, plan, duration, pid);
      runs.push(r);
      const bad = r.non2xx + r.errors + r.timeouts;
      log(`rep ${rep} ${pad(name, 12, true)} ${pad(r.rps.toFixed(0), 7)} req/s  p50 ${pad(r.p50, 4)} ms  p99 ${pad(r.p99, 4)} ms  ` +
        `${r.cpuMsPerRequest === null ? '' : `cpu ${r.cpuMsPerRequest.toFixed(3)} ms/req (${(100 * r.cpuCoreShare!).toFixed(0)} % of a core)  `}` +
        `load ${r.loadavg.toFixed(1)}  non-2xx ${r.non2xx}  errors ${r.errors}  timeouts ${r.timeouts}${bad ? `  !!! ${JSON.stringify(r.statusCodes)}` : ''}` +
        `${r.warmupProblems ? `  (warm-up problems: ${r.warmupProblems})` : ''}`);
    }
  }

  const byName = (n: CaseName) => runs.filter((r) => r.name === n);
  const caseSummary = (n: CaseName) => {
    const rs = byName(n);
    return {
      rps: median(rs.map((r) => r.rps)),
      p99: median(rs.map((r) => r.p99)),
      p99Worst: Math.max(...rs.map((r) => r.p99)),
      non2xx: rs.reduce((s, r) => s + r.non2xx, 0),
      errors: rs.reduce((s, r) => s + r.errors + r.timeouts, 0),
      warmupProblems: rs.reduce((s, r) => s + r.warmupProblems, 0),
      cpuMsPerRequest: rs.every((r) => r.cpuMsPerRequest !== null) ? median(rs.map((r) => r.cpuMsPerRequest!)) : null,
    };
  };
  const caseNames = pairs.flatMap((p) => [PAIRS[p].service, PAIRS[p].bare, PAIRS[p].floor]);
  const summary = Object.fromEntries(caseNames.map((n) => [n, caseSummary(n)])) as Partial<Record<CaseName, ReturnType<typeof caseSummary>>>;
  const ratios = Object.fromEntries(pairs.map((p) => {
    const { service, bare, floor: floorCase, target: goal } = PAIRS[p];
    const perRep = Array.from({ length: reps }, (_, i) => byName(service)[i].rps / byName(bare)[i].rps);
    const med = median(perRep);
    const floorPerRep = Array.from({ length: reps }, (_, i) => byName(service)[i].rps / byName(floorCase)[i].rps);
    const floorMed = median(floorPerRep);
    const floorOfBare = median(Array.from({ length: reps }, (_, i) => byName(floorCase)[i].rps / byName(bare)[i].rps));
    // The CPU the target process spent per request, service over bare (and over the floor): what the ratio
    // would tend to if both processes were the only limit (independent of other load on the machine, which
    // the req/s figures are not).
    const cpuS = summary[service]!.cpuMsPerRequest;
    const cpuB = summary[bare]!.cpuMsPerRequest;
    const cpuF = summary[floorCase]!.cpuMsPerRequest;
    return [p, {
      perRep, median: med, target: goal, pass: med >= goal,
      p99: summary[service]!.p99, p99Pass: summary[service]!.p99 < TARGETS.p99Ms,
      cpuBound: cpuS && cpuB ? cpuB / cpuS : null,
      floor: {
        perRep: floorPerRep, median: floorMed, target: TARGETS.floor, pass: floorMed >= TARGETS.floor,
        floorOfBare, cpuBound: cpuS && cpuF ? cpuF / cpuS : null, floorCpuOfBare: cpuF && cpuB ? cpuB / cpuF : null,
      },
    }];
  })) as Partial<Record<PairName, {
    perRep: number[]; median: number; target: number; pass: boolean; p99: number; p99Pass: boolean; cpuBound: number | null;
    floor: { perRep: number[]; median: number; target: number; pass: boolean; floorOfBare: number; cpuBound: number | null; floorCpuOfBare: number | null };
  }>>;
  const valid = runs.every((r) => r.non2xx + r.errors + r.timeouts === 0);

  const webhookContext = {
    publicUrl: target.publicUrl, adminUrl: target.adminUrl, adminToken: target.adminToken, apiKey: seeded.apiKey,
    partnerId: seeded.partnerId, merchantId: seeded.merchantId, databaseUrl, chain, duration, reps,
    connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS,
  };
  // One partner is held to WEBHOOK_PARTNER_CONCURRENCY (10) attempts in flight by the fairness rule (DESIGN
  // §7); ten partners let the worker run its 100 at once: both are printed.
  const webhookPartners = (process.env.BENCH_WEBHOOK_PARTNERS || '1,10').split(',').map((p) => intEnvValue('BENCH_WEBHOOK_PARTNERS', p.trim(), 1));
  const webhooks: Array<{ partners: number; outcome: WebhookOutcome }> = [];
  if (wanted.includes('webhooks')) {
    for (const partners of webhookPartners) webhooks.push({ partners, outcome: await maybeBenchWebhooks({ ...webhookContext, partners }) });
  }

  const counts = external ? null : await rowCounts(databaseUrl).catch(() => null);

  // Report.
  const line = '─'.repeat(98);
  console.log(`\n${line}`);
  console.log(`${pad('case', 14, true)}${pad('req/s (median)', 16)}${pad('p99 ms (median)', 17)}${pad('p99 ms (worst)', 16)}${pad('non-2xx', 10)}${pad('errors', 9)}${pad('cpu ms/req', 12)}`);
  for (const n of caseNames) {
    const s = summary[n]!;
    console.log(`${pad(n, 14, true)}${pad(s.rps.toFixed(0), 16)}${pad(s.p99, 17)}${pad(s.p99Worst, 16)}${pad(s.non2xx, 10)}${pad(s.errors, 9)}${pad(s.cpuMsPerRequest?.toFixed(3) ?? '-', 12)}`);
  }
  console.log(line);
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' ');
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  for (const p of pairs) {
    const r = ratios[p]!;
    const f = r.floor;
    console.log(`${PAIRS[p].label} / bare   median ${r.median.toFixed(2)}  (per rep ${fmt(r.perRep)})  target ≥ ${r.target}  ${verdict(r.pass)}` +
      `   p99 ${r.p99} ms (< ${TARGETS.p99Ms}) ${verdict(r.p99Pass)}` +
      `${r.cpuBound === null ? '' : `   cpu-cost ratio ${r.cpuBound.toFixed(2)}`}`);
    console.log(`${PAIRS[p].label} / floor  median ${f.median.toFixed(2)}  (per rep ${fmt(f.perRep)})  target ≥ ${f.target}  ${verdict(f.pass)}` +
      `${f.cpuBound === null ? '' : `   cpu-cost ratio ${f.cpuBound.toFixed(2)}`}` +
      `   (floor / bare ${f.floorOfBare.toFixed(2)}${f.floorCpuOfBare === null ? '' : `, cpu-cost ${f.floorCpuOfBare.toFixed(2)}`})`);
  }
  for (const { partners, outcome } of webhooks) {
    const name = pad(`webhooks × ${partners} partner${partners === 1 ? '' : 's'}`, 25, true);
    if (outcome.ran) {
      if (outcome.error) console.log(`${name}FAILED: ${outcome.error}`);
      else {
        console.log(`${name}ratio ${outcome.ratio?.toFixed(2) ?? '(none returned)'}  ${JSON.stringify(outcome.result)}`);
        const l = (outcome.result as { latency?: LatencyResult } | null)?.latency;
        if (l) {
          console.log(`${pad('', 25)}commit to receipt at ${l.rate}/s (committed at ${l.achievedRate}/s, lag p99 ${l.lagP99Ms} ms): p50 ${l.p50Ms} ms, p99 ${l.p99Ms} ms ` +
            `(< 1000) ${verdict(l.p99Ms < 1000 && l.missing === 0 && l.achievedRate >= 0.95 * l.rate)}, max ${l.maxMs} ms${l.missing ? `, ${l.missing} not received` : ''}`);
        }
      }
    } else if (outcome.error) {
      console.log(`${name}skipped: ${outcome.error}`);
    }
  }
  if (counts) console.log(`rows at the end: payment_requests ${counts.service}, bench_bare_requests ${counts.bare}, bench_floor_requests ${counts.floor ?? '-'}`);
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
    settings: { connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS, durationSeconds: duration, repetitions: reps, idPool: ID_POOL, amounts },
    target: external ? { mode: 'external', publicUrl: target.publicUrl } : { mode: 'spawned', command: spawned!.command, databaseUrl },
    valid,
    targets: TARGETS,
    ratios,
    summary,
    runs,
    webhooks,
    rows: counts,
  };
  mkdirSync(path.dirname(RESULT_FILE), { recursive: true });
  writeFileSync(RESULT_FILE, `${JSON.stringify(result, null, 2)}\n`);
  log(`result written to ${path.relative(process.cwd(), RESULT_FILE)}`);

  if (profile && spawned) {
    // SIGTERM: each closes and node writes its profile on exit.
    await Promise.all([spawned.child.stop(), floor.child.stop()]);
    console.log(summariseProfiles(profileDir));
    // CPU per request over each process's measured windows, to scale its profile's shares.
    const cpuPerRequest = (names: CaseName[]) => {
      const rs = runs.filter((r) => names.includes(r.name as CaseName) && r.cpuMsPerRequest !== null);
      return rs.reduce((s, r) => s + r.cpuMsPerRequest! * r.total, 0) / Math.max(1, rs.reduce((s, r) => s + r.total, 0));
    };
    console.log(compareProfiles(
      { label: 'service', dir: profileDir, cpuMsPerRequest: cpuPerRequest(pairs.map((p) => PAIRS[p].service)) },
      { label: 'floor', dir: floorProfileDir, cpuMsPerRequest: cpuPerRequest(pairs.map((p) => PAIRS[p].floor)) },
    ));
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
