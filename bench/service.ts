import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import Redis from 'ioredis';
import { deployToken, findFreePort, startLocalNode } from '../scripts/chain/local-node';
import { type Child, onCleanup, startNode } from './children';
import { ROOT, SWC } from './database';

/** BENCH_REDIS_PREFIX moves the bench's keys aside, to run beside another bench on the same Redis. */
export const REDIS_PREFIX = process.env.BENCH_REDIS_PREFIX || 'prs-bench';

export function benchRedisUrl(): string {
  return process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/**
 * Deletes the bench's own Redis keys (`prs-bench:*` by default: rate-limit counters, BullMQ queues with the expiry jobs
 * of earlier runs' requests), which refer to a database that has just been recreated. Returns the count.
 */
export async function clearRedisPrefix(prefix = REDIS_PREFIX): Promise<number> {
  const redis = new Redis(benchRedisUrl(), { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export interface Chain {
  rpcUrl: string;
  chainId: string;
  token: string;
}

/** A local Hardhat node with the test token deployed; stopped by the bench's cleanup. */
export async function startChain(): Promise<Chain> {
  const node = await startLocalNode({ port: await findFreePort() });
  onCleanup('chain node', node.stop);
  const token = await deployToken(node.url, { name: 'Bench USD', symbol: 'BUSD', decimals: 6 });
  return { rpcUrl: node.url, chainId: '31337', token };
}

export interface SpawnedService {
  child: Child;
  publicUrl: string;
  adminUrl: string;
  adminToken: string;
  /** How the service was started, for the report. */
  command: string;
}

export interface ServiceOptions {
  databaseUrl: string;
  chain: Chain;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** The child's name (its log file, .tmp/bench-logs/<name>.log) when several run at once; default "service". */
  name?: string;
}

/**
 * The service as production runs it: its own process, API role only, configured by environment. The built
 * entry point is used when present (no transpiler in the process), else the TypeScript sources through swc.
 */
export async function startService(opts: ServiceOptions): Promise<SpawnedService> {
  const port = await findFreePort();
  let adminPort = await findFreePort();
  while (adminPort === port) adminPort = await findFreePort();
  const adminToken = `bench-admin-${Math.random().toString(36).slice(2)}-token`;
  const entry = builtIsFresh() && process.env.BENCH_FROM_SOURCE !== '1' ? [BUILT] : [...SWC, 'src/main.ts'];
  const args = [...(opts.nodeFlags ?? []), ...entry, '--api'];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: benchRedisUrl(),
    REDIS_PREFIX: REDIS_PREFIX,
    RATE_LIMIT_SCALE: '100000',
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_TOKEN: adminToken,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ONBOARDING_TOKEN_SECRET: 'bench-onboarding-secret-0123456789',
    CHAIN_TEST_RPC_URL: opts.chain.rpcUrl,
    CHAIN_TEST_CHAIN_ID: opts.chain.chainId,
    CHAIN_TEST_TOKEN_ADDRESS: opts.chain.token,
    CHAIN_TEST_CONFIRMATIONS: '1',
    // Only test mode is benchmarked; a live chain from the caller's environment must not leak in.
    CHAIN_LIVE_RPC_URL: '',
    RATES: 'usd:1',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  };
  const child = startNode(opts.name ?? 'service', args, {
    cwd: ROOT,
    env,
    killAfterMs: 15_000,
  });
  const publicUrl = `http://127.0.0.1:${port}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  await waitForAnswer(child, publicUrl, 120_000);
  await waitForAnswer(child, adminUrl, 10_000);
  return { child, publicUrl, adminUrl, adminToken, command: `node ${args.join(' ')}` };
}

const BUILT = path.join(ROOT, 'dist', 'src', 'main.js');

/** dist/ is used only when it is newer than every source file: a stale build would measure old code. */
function builtIsFresh(): boolean {
  if (!existsSync(BUILT)) return false;
  const builtAt = statSync(BUILT).mtimeMs;
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => {
      const p = path.join(dir, e.name);
      return e.isDirectory() ? newest(p) : statSync(p).mtimeMs;
    }));
  return newest(path.join(ROOT, 'src')) <= builtAt && newest(path.join(ROOT, 'migrations')) <= builtAt;
}

/** Resolves once the URL answers any HTTP status; fails when the child dies or the time runs out. */
export async function waitForAnswer(child: Child | null, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child?.hasExited()) throw new Error(`${child.name} exited before answering on ${url}:\n${child.tail()}`);
    try {
      const res = await fetch(`${url}/api/v1/requests/ready-check`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      throw new Error(`${child?.name ?? url} did not answer on ${url} within ${timeoutMs} ms${child ? `:\n${child.tail()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
