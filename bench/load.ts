import { randomBytes } from 'node:crypto';
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
}

/** A request sequence for autocannon: one entry whose setupRequest makes each request distinct. */
export type RequestPlan = autocannon.Request[];

let current: autocannon.Instance | null = null;

/** Stops the load in flight, for Ctrl-C. */
export function stopLoad(): void {
  current?.stop();
}

/** One case: 2 s warm-up, then `duration` s measured, 50 connections, no pipelining. */
export async function runCase(name: string, rep: number, url: string, requests: RequestPlan, duration: number): Promise<CaseResult> {
  const instance = autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    warmup: { connections: CONNECTIONS, duration: WARMUP_SECONDS },
    timeout: 10,
    requests,
  });
  current = instance;
  let r: autocannon.Result;
  try {
    r = await instance;
  } finally {
    current = null;
  }
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

/** POSTs of create bodies, each with its own key and a random amount; the same generator for both targets. */
export function createPlan(path: string, merchantId: string, headers: Record<string, string>): RequestPlan {
  const nextKey = keyMaker();
  return [
    {
      method: 'POST',
      path,
      headers: { ...headers, 'content-type': 'application/json' },
      setupRequest: (req) => ({
        ...req,
        body: JSON.stringify({ account_id: merchantId, fiat_amount_int: randomFiat(), idempotency_key: nextKey() }),
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
