import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What global setup prepared for this run: a fresh database, a Redis prefix, a local chain and tokens. */
export interface TestEnv {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  rpcUrl: string;
  chainId: string;
  token: string;
  otherToken: string;
}

/**
 * One file per database name: concurrent jest runs on one machine (each with its own TEST_DATABASE_NAME) would
 * otherwise overwrite each other's file, and one run's services would use another run's database and chain.
 */
export const TEST_ENV_FILE = join(__dirname, '..', '..', '.tmp', `test-env-${process.env.TEST_DATABASE_NAME ?? 'prs_test'}.json`);

/** The file runs set up before the per-database name existed; read only when the new one is missing. */
const LEGACY_ENV_FILE = join(__dirname, '..', '..', '.tmp', 'test-env.json');

export function testEnv(): TestEnv {
  const file = existsSync(TEST_ENV_FILE) ? TEST_ENV_FILE : LEGACY_ENV_FILE;
  return JSON.parse(readFileSync(file, 'utf8')) as TestEnv;
}
