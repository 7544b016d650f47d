import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';

export const CONNECTIONS = 50;
export const WARMUP_SECONDS = 2;

export interface CaseResult {
  name: string;
  rep: number;
  /** Mean of autocannon's per-second samples over the measured window (what autocannon prints as Req/Sec). */
  rps: number;
  /** Completed requests in the measured window. */
  total: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Non-2xx, errors and timeouts seen during the warm-up (reported, not part of the figures). */
  warmupProblems: number;
  seconds: number;
  /**
   * CPU time the target process spent per completed request in the measured window, and its share of one
   * core: a load-independent cost figure, and whether the target itself was the limit (≈1.0) or waited on
   * something else (the database, the load generator, other work on the machine).
   */
  cpuMsPerRequest: number | null;
  cpuCoreShare: number | null;
  /** 1-minute load average when the case ended: other work on the machine shows here. */
  loadavg: number;
}

/** utime + stime of a process in milliseconds (Linux /proc), or null where unavailable. */
export function cpuMs(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ", field 3 (state) is index 0, so utime (14) and stime (15) are indexes 11 and 12.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** A request sequence for autocannon: one entry whose setupRequest makes each request distinct. */
export type RequestPlan = autocannon.Request[];

let current: autocannon.Instance | null = null;

/**
 * Stops the load in flight, for Ctrl-C. An instance with a warm-up is a plain tracker without stop(); then
 * the load simply ends with the process, which exits right after the cleanup.
 */
export function stopLoad(): void {
  if (typeof current?.stop === 'function') current.stop();
}

/** One case: 2 s warm-up, then `duration` s measured, 50 connections, no pipelining. */
export async function runCase(
  name: string,
  rep: number,
  url: string,
  requests: RequestPlan,
  duration: number,
  targetPid?: number,
): Promise<CaseResult> {
  const instance = autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    warmup: { connections: CONNECTIONS, duration: WARMUP_SECONDS },
    timeout: 10,
    requests,
  });
  current = instance;
  // 'start' is emitted once the measured run begins (the warm-up has a tracker of its own).
  let cpuAtStart: number | null = null;
  let wallAtStart = 0;
  instance.on('start', () => {
    cpuAtStart = cpuMs(targetPid);
    wallAtStart = performance.now();
  });
  let r: autocannon.Result;
  try {
    r = await instance;
  } finally {
    current = null;
  }
  const cpuAtEnd = cpuMs(targetPid);
  const wall = performance.now() - wallAtStart;
  const cpu = cpuAtStart !== null && cpuAtEnd !== null ? cpuAtEnd - cpuAtStart : null;
  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = Number(s.count);
  const w = r.warmup;
  return {
    name,
    rep,
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    warmupProblems: w ? w.non2xx + w.errors + w.timeouts : 0,
    seconds: r.duration,
    cpuMsPerRequest: cpu !== null && r.requests.total > 0 ? cpu / r.requests.total : null,
    cpuCoreShare: cpu !== null && wall > 0 ? cpu / wall : null,
    loadavg: os.loadavg()[0],
  };
}

/** A fresh idempotency key per request: 32–64 of [A-Za-z0-9_-], unique across runs. */
export function keyMaker(): () => string {
  const run = randomBytes(6).toString('hex');
  let n = 0;
  return () => `bench_${run}_${(n++).toString(36).padStart(16, '0')}`;
}

export function randomFiat(): number {
  return 100 + Math.floor(Math.random() * 999_901);
}

/**
 * The fiat amounts of the measured creates: random in 100..1 000 000 by default, as partners send them (so
 * some collide with an open request's amount and the service picks the next free one); BENCH_AMOUNTS=sequential
 * counts up from 1 000 001 instead, never colliding, to isolate what collisions cost.
 */
export function fiatMaker(mode: string | undefined): () => number {
  if (mode === undefined || mode === '' || mode === 'random') return randomFiat;
  if (mode !== 'sequential') throw new Error(`BENCH_AMOUNTS must be random or sequential, got "${mode}"`);
  let n = 1_000_001;
  return () => n++;
}

/** POSTs of create bodies, each with its own key and a random amount; the same generator for both targets. */
export function createPlan(path: string, merchantId: string, headers: Record<string, string>, nextFiat: () => number): RequestPlan {
  const nextKey = keyMaker();
  return [
    {
      method: 'POST',
      path,
      headers: { ...headers, 'content-type': 'application/json' },
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ account_id: merchantId, fiat_amount_int: nextFiat(), idempotency_key: nextKey() }),
      }),
    },
  ];
}

/** GETs rotating through a pool of existing ids. */
export function getPlan(pathOf: (id: string) => string, ids: string[], headers: Record<string, string>): RequestPlan {
  if (ids.length === 0) throw new Error('no ids to GET');
  let i = 0;
  return [
    {
      method: 'GET',
      headers,
      setupRequest: (req) => ({ ...req, path: pathOf(ids[i++ % ids.length]) }),
    },
  ];
}
