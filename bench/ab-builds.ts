/**
 * A/B of two built trees (BENCH_A_ROOT, BENCH_B_ROOT, each with dist/ from `npm run build`, e.g. a worktree of
 * main and one of a branch) on one database, Redis and chain, the framework floor beside them: create and get
 * (BENCH_CASES), interleaved within each repetition with the order rotating, BENCH_REPS × (3 s idle + 2 s
 * warm-up + BENCH_DURATION s). Reports the CPU each process spent per request (from /proc, less its own idle
 * rate measured just before), per repetition and median, and its ratio to the floor's: on a shared machine
 * req/s swings with other work, CPU per request much less. Both services are seeded through the admin and
 * onboarding APIs, as production's first non-API requests would. BENCH_A_NODE_OPTIONS / BENCH_B_NODE_OPTIONS
 * give one side node flags (NODE_OPTIONS), to compare a runtime setting on one build.
 *   BENCH_A_ROOT=/work/wt/base BENCH_B_ROOT=. npm run bench:ab
 */
import path from 'node:path';
import { clearRedisPrefix, benchRedisUrl, REDIS_PREFIX, startChain, waitForAnswer, type Chain } from './service';
import { cleanup, startNode } from './children';
import { analyze, benchDatabaseUrl, dropDatabase, migrate } from './database';
import { baselineIds, startBaseline } from './baselines';
import { call, inParallel, seed } from './seed';
import { cpuMs, createPlan, fiatMaker, getPlan, keyMaker, randomFiat, runCase } from './load';
import { findFreePort } from '../scripts/chain/local-node';

async function startBuilt(name: string, root: string, databaseUrl: string, chain: Chain) {
  const port = await findFreePort();
  let adminPort = await findFreePort();
  while (adminPort === port) adminPort = await findFreePort();
  const adminToken = `bench-admin-${Math.random().toString(36).slice(2)}-token`;
  const child = startNode(name, [path.join(root, 'dist', 'src', 'main.js'), '--api'], {
    cwd: root,
    killAfterMs: 15_000,
    env: {
      ...process.env, NODE_ENV: 'development', DATABASE_URL: databaseUrl, REDIS_URL: benchRedisUrl(), REDIS_PREFIX: `${REDIS_PREFIX}-${name}`,
      RATE_LIMIT_SCALE: '100000', PORT: String(port), ADMIN_PORT: String(adminPort), ADMIN_HOST: '127.0.0.1', ADMIN_TOKEN: adminToken,
      PUBLIC_URL: `http://127.0.0.1:${port}`, ONBOARDING_TOKEN_SECRET: 'bench-onboarding-secret-0123456789',
      CHAIN_TEST_RPC_URL: chain.rpcUrl, CHAIN_TEST_CHAIN_ID: chain.chainId, CHAIN_TEST_TOKEN_ADDRESS: chain.token, CHAIN_TEST_CONFIRMATIONS: '1',
      CHAIN_LIVE_RPC_URL: '', RATES: 'usd:1', WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      NODE_OPTIONS: process.env[`BENCH_${name}_NODE_OPTIONS`] ?? '',
    },
  });
  const publicUrl = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitForAnswer(child, publicUrl, 120_000);
  await waitForAnswer(child, adminUrl, 10_000);
  return { child, publicUrl, adminUrl, adminToken };
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function main() {
  const reps = Number(process.env.BENCH_REPS ?? 3);
  const duration = Number(process.env.BENCH_DURATION ?? 10);
  const databaseUrl = benchDatabaseUrl();
  await dropDatabase(databaseUrl);
  await migrate(databaseUrl);
  for (const name of ['A', 'B']) await clearRedisPrefix(`${REDIS_PREFIX}-${name}`);
  const chain = await startChain();
  const builds = { A: process.env.BENCH_A_ROOT!, B: process.env.BENCH_B_ROOT! };
  const services: Record<string, Awaited<ReturnType<typeof startBuilt>> & { ids: string[]; key: string; merchant: string }> = {};
  for (const [n, root] of Object.entries(builds)) {
    const s = await startBuilt(n, root, databaseUrl, chain);
    const seeded = await seed(s);
    const k = keyMaker();
    const ids = await inParallel(1000, 25, async () => {
      const r = await call(s.publicUrl, 'POST', '/api/v1/requests/create', { key: seeded.apiKey, body: { account_id: seeded.merchantId, fiat_amount_int: randomFiat(), idempotency_key: k() } });
      if (r.status !== 201) throw new Error(`pool create ${r.status} ${r.text}`);
      return r.body.request_id as string;
    });
    services[n] = { ...s, ids, key: seeded.apiKey, merchant: seeded.merchantId };
    console.log(`${n}: ${root} pid ${s.child.proc.pid}`);
  }
  const floor = await startBaseline('floor', databaseUrl, chain.token);
  const floorIds = await baselineIds(floor, 1000, keyMaker());
  await analyze(databaseUrl, ['payment_requests', floor.fixture.table]);
  const fiat = fiatMaker('random');
  const cases: Record<string, () => { url: string; pid?: number; plan: ReturnType<typeof getPlan> }> = {
    'A-create': () => ({ url: services.A.publicUrl, pid: services.A.child.proc.pid, plan: createPlan('/api/v1/requests/create', services.A.merchant, { authorization: `Bearer ${services.A.key}` }, fiat) }),
    'B-create': () => ({ url: services.B.publicUrl, pid: services.B.child.proc.pid, plan: createPlan('/api/v1/requests/create', services.B.merchant, { authorization: `Bearer ${services.B.key}` }, fiat) }),
    'floor-insert': () => ({ url: floor.url, pid: floor.child.proc.pid, plan: createPlan('/', floor.fixture.merchantId, {}, fiat) }),
    'A-get': () => ({ url: services.A.publicUrl, pid: services.A.child.proc.pid, plan: getPlan((id) => `/api/v1/requests/${id}`, services.A.ids, { authorization: `Bearer ${services.A.key}` }) }),
    'B-get': () => ({ url: services.B.publicUrl, pid: services.B.child.proc.pid, plan: getPlan((id) => `/api/v1/requests/${id}`, services.B.ids, { authorization: `Bearer ${services.B.key}` }) }),
    'floor-select': () => ({ url: floor.url, pid: floor.child.proc.pid, plan: getPlan((id) => `/${id}`, floorIds, {}) }),
  };
  const groups = (process.env.BENCH_CASES ?? 'get,create').split(',').map((g) => (g === 'get' ? ['A-get', 'B-get', 'floor-select'] : ['A-create', 'B-create', 'floor-insert']));
  const cpu: Record<string, number[]> = {};
  const rps: Record<string, number[]> = {};
  for (let rep = 1; rep <= reps; rep++) {
    for (const g of groups) {
      const k = (rep - 1) % 3;
      for (const name of [...g.slice(k), ...g.slice(0, k)]) {
        const { url, pid, plan } = cases[name]();
        // The process's own CPU while idle (pollers, timers), taken off what the load's window cost.
        const idle0 = cpuMs(pid)!;
        await new Promise((r) => setTimeout(r, 3000));
        const idleRate = (cpuMs(pid)! - idle0) / 3000;
        const r = await runCase(name, rep, url, plan, duration, pid);
        const net = (r.cpuMsPerRequest! * r.total - idleRate * r.seconds * 1000) / r.total;
        console.log(`   idle ${(idleRate * 1000).toFixed(0)} ms/s; gross ${r.cpuMsPerRequest!.toFixed(3)} net ${net.toFixed(3)} ms/req over ${r.total} requests`);
        (cpu[name] ??= []).push(net);
        (rps[name] ??= []).push(r.rps);
        console.log(`rep ${rep} ${name.padEnd(12)} ${r.rps.toFixed(0).padStart(6)} req/s cpu ${r.cpuMsPerRequest!.toFixed(3)} ms/req (${(100 * r.cpuCoreShare!).toFixed(0)} %) load ${r.loadavg.toFixed(1)} bad ${r.non2xx + r.errors + r.timeouts}`);
      }
    }
  }
  for (const [svc, fl] of [['create', 'floor-insert'], ['get', 'floor-select']] as const) {
    if (!cpu[`A-${svc}`]) continue;
    const f = median(cpu[fl]);
    for (const n of ['A', 'B']) {
      const c = median(cpu[`${n}-${svc}`]);
      const perRep = cpu[`${n}-${svc}`].map((x, i) => (cpu[fl][i] / x).toFixed(2)).join(' ');
      const rpsRatio = median(rps[`${n}-${svc}`].map((x, i) => x / rps[fl][i]));
      console.log(`${svc} ${n}: cpu ${c.toFixed(3)} ms/req (reps ${cpu[`${n}-${svc}`].map((x) => x.toFixed(3)).join(' ')}), floor ${f.toFixed(3)}; cpu-cost to floor ${(f / c).toFixed(2)} (per rep ${perRep}); req/s to floor ${rpsRatio.toFixed(2)}`);
    }
  }
}

main().then(() => cleanup().then(() => process.exit(0)), async (e) => { console.error(e); await cleanup(); process.exit(1); });
