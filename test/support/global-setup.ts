import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../../src/database/data-source';
import { deployToken, findFreePort, startLocalNode } from '../../scripts/chain/local-node';
import { TEST_ENV_FILE, type TestEnv } from './test-env';

/**
 * Once per jest run: a fresh database migrated from the committed migrations, a unique Redis prefix, and a
 * real local EVM node (Hardhat) with the test token and a second token of the same shape deployed.
 * TEST_DATABASE_NAME lets parallel runs on one machine keep apart.
 */
export default async function globalSetup(): Promise<void> {
  const dbName = process.env.TEST_DATABASE_NAME ?? 'prs_test';
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;
  await migrate(databaseUrl);

  const node = await startLocalNode({ port: await findFreePort() });
  (globalThis as { __chainNode?: { stop(): Promise<void> } }).__chainNode = node;
  const token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  const otherToken = await deployToken(node.url, { name: 'Fake USD', symbol: 'TUSD', decimals: 6 });

  const env: TestEnv = {
    databaseUrl,
    redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: `prs-test-${randomBytes(4).toString('hex')}`,
    rpcUrl: node.url,
    chainId: '31337',
    token,
    otherToken,
  };
  mkdirSync(dirname(TEST_ENV_FILE), { recursive: true });
  writeFileSync(TEST_ENV_FILE, JSON.stringify(env, null, 2));
}
