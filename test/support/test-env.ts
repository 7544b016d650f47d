import { readFileSync } from 'node:fs';
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

export const TEST_ENV_FILE = join(__dirname, '..', '..', '.tmp', 'test-env.json');

export function testEnv(): TestEnv {
  return JSON.parse(readFileSync(TEST_ENV_FILE, 'utf8')) as TestEnv;
}
