/**
 * `npm run bench:floor`: the floor NestJS on Express sets on this machine, whatever the service does, for both
 * hot paths: empty handlers on Express configured as the service configures it (bench/floor-server.ts) running
 * the bare baseline's INSERT (create) and SELECT (get), against the bare Node http + pg server doing the same
 * (bench/bare-server.ts). Same method as `npm run bench` (which measures the floor too, beside the service):
 * 50 connections, 2 s warm-up, BENCH_DURATION s (default 10), BENCH_REPS repetitions (default 3), bare and floor
 * interleaved, median of per-repetition ratios. Needs no service, chain or Redis: its own database
 * (BENCH_FLOOR_DATABASE_URL, default prs_bench_floor, recreated and migrated), so it can run beside a bench.
 * Measured 2026-11-22 (get only, default Express): bare ≈ 10.5k req/s, empty Nest handler ≈ 4.5k req/s (0.43).
 */
import { baselineIds, startBaseline } from './baselines';
import { cleanup } from './children';
import { analyze, dropDatabase, migrate } from './database';
import { type CaseResult, createPlan, fiatMaker, getPlan, keyMaker, runCase, stopLoad } from './load';

const log = (msg: string) => console.log(`[bench:floor] ${msg}`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const num = (name: string, fallback: number) => {
  const v = Number(process.env[name] || fallback);
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a whole number ≥ 1`);
  return v;
};

async function main(): Promise<void> {
  const url = process.env.BENCH_FLOOR_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/prs_bench_floor';
  const duration = num('BENCH_DURATION', 10);
  const reps = num('BENCH_REPS', 3);
  log(`database ${url}: recreating and migrating`);
  await dropDatabase(url);
  await migrate(url);
  const token = `0x${'5a'.repeat(20)}`;
  const bare = await startBaseline('bare', url, token);
  const floor = await startBaseline('floor', url, token);
  const nextKey = keyMaker();
  const ids = { bare: await baselineIds(bare, 1000, nextKey), floor: await baselineIds(floor, 1000, nextKey) };
  await analyze(url, [bare.fixture.table, floor.fixture.table]);
  const fiat = { bare: fiatMaker('random'), floor: fiatMaker('random') };

  const runs: CaseResult[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    for (const path of ['create', 'get'] as const) {
      const order = rep % 2 === 1 ? [bare, floor] : [floor, bare];
      for (const b of order) {
        const plan = path === 'create' ? createPlan('/', b.fixture.merchantId, {}, fiat[b.kind]) : getPlan((id) => `/${id}`, ids[b.kind], {});
        const r = await runCase(`${path} ${b.kind}`, rep, b.url, plan, duration, b.child.proc.pid);
        runs.push(r);
        log(`rep ${rep} ${`${path} ${b.kind}`.padEnd(13)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${r.p99} ms  ` +
          `cpu ${r.cpuMsPerRequest?.toFixed(3) ?? '-'} ms/req  load ${r.loadavg.toFixed(1)}  non-2xx ${r.non2xx}  errors ${r.errors + r.timeouts}`);
      }
    }
  }
  const of = (name: string) => runs.filter((r) => r.name === name);
  const result: Record<string, unknown> = {};
  for (const path of ['create', 'get'] as const) {
    const b = of(`${path} bare`);
    const f = of(`${path} floor`);
    const perRep = b.map((x, i) => f[i].rps / x.rps);
    const cpuB = median(b.map((x) => x.cpuMsPerRequest ?? NaN));
    const cpuF = median(f.map((x) => x.cpuMsPerRequest ?? NaN));
    result[path] = {
      bare: Math.round(median(b.map((x) => x.rps))), floor: Math.round(median(f.map((x) => x.rps))),
      ratio: +median(perRep).toFixed(2), perRep: perRep.map((x) => +x.toFixed(2)), cpuCostRatio: +(cpuB / cpuF).toFixed(2),
      floorP99: median(f.map((x) => x.p99)),
    };
  }
  console.log(JSON.stringify(result));
  if (runs.some((r) => r.non2xx + r.errors + r.timeouts > 0)) {
    console.log('INVALID RUN: some measured windows saw non-2xx responses or errors');
    process.exitCode = 1;
  }
}

process.once('SIGINT', () => {
  stopLoad();
  void cleanup().then(() => process.exit(130));
});
main()
  .catch((e: Error) => {
    console.error(`[bench:floor] FAILED: ${e.stack ?? e.message}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    process.exit(process.exitCode ?? 0);
  });
