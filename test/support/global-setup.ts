import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../../src/database/data-source';
import { deployToken, findFreePort, startLocalNode, type LocalNode } from '../../scripts/chain/local-node';
import { TEST_DATABASE_NAME, testEnvFile, type TestEnv } from './test-env';

/**
 * Once per jest run, for each worker: a fresh database migrated from the committed migrations, a unique Redis
 * prefix, and a real local EVM node (Hardhat) with the test token and a second token of the same shape
 * deployed. Worker 1 keeps the plain database name, so a `--runInBand` run looks as it always did.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  const workers = Math.max(1, globalConfig.maxWorkers);
  const nodes: LocalNode[] = [];
  (globalThis as { __chainNodes?: LocalNode[] }).__chainNodes = nodes;
  // The chains start side by side; the databases one after another (CREATE DATABASE copies template1, which
  // two concurrent copies would both be using).
  const chains = Array.from({ length: workers }, () => startChain(nodes));
  // Every start is awaited below; a failure meanwhile must not go unhandled (global setup fails on it then).
  for (const chain of chains) chain.catch(() => undefined);
  for (let worker = 1; worker <= workers; worker++) {
    const databaseUrl = await freshDatabase(worker === 1 ? TEST_DATABASE_NAME : `${TEST_DATABASE_NAME}_w${worker}`);
    const env: TestEnv = {
      databaseUrl,
      redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      redisPrefix: `prs-test-${randomBytes(4).toString('hex')}`,
      chainId: '31337',
      ...(await chains[worker - 1]),
    };
    mkdirSync(dirname(testEnvFile(worker)), { recursive: true });
    writeFileSync(testEnvFile(worker), JSON.stringify(env, null, 2));
  }
}

async function freshDatabase(dbName: string): Promise<string> {
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;
  await migrate(databaseUrl);
  return databaseUrl;
}

async function startChain(nodes: LocalNode[]): Promise<Pick<TestEnv, 'rpcUrl' | 'token' | 'otherToken'>> {
  const node = await startLocalNode({ port: await findFreePort() });
  nodes.push(node);
  const token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  const otherToken = await deployToken(node.url, { name: 'Fake USD', symbol: 'TUSD', decimals: 6 });
  return { rpcUrl: node.url, token, otherToken };
}
