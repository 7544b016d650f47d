import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What global setup prepared for one jest worker: a fresh database, a Redis prefix, a local chain and tokens. */
export interface TestEnv {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  rpcUrl: string;
  chainId: string;
  token: string;
  otherToken: string;
}

/** The run's database name; TEST_DATABASE_NAME lets concurrent jest runs on one machine keep apart. */
export const TEST_DATABASE_NAME = process.env.TEST_DATABASE_NAME ?? 'prs_test';

/**
 * Where global setup writes the environment of jest worker `worker` (1-based; `--runInBand` runs as worker 1).
 * Each worker has its own database and chain: test files running side by side must not see each other's
 * requests, plans or transfers, nor race for the dev accounts' nonces.
 */
export function testEnvFile(worker: number): string {
  return join(__dirname, '..', '..', '.tmp', `test-env-${TEST_DATABASE_NAME}-w${worker}.json`);
}

/**
 * This process's jest worker. Processes a test spawns (a service, a script) are not jest workers: they get their
 * database and chain as variables (testEnvVars), never through this file.
 */
function currentWorker(): number {
  const id = Number(process.env.JEST_WORKER_ID ?? '1');
  return Number.isInteger(id) && id >= 1 ? id : 1;
}

export function testEnv(): TestEnv {
  return JSON.parse(readFileSync(testEnvFile(currentWorker()), 'utf8')) as TestEnv;
}
