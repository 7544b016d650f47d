import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { findFreePort } from '../../scripts/chain/local-node';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { killProcess } from '../support/worker-process';

/**
 * Serving a request outside the partner API must not turn on the process's promise hooks: an
 * AsyncLocalStorage entered once (nestjs-pino's per-request log context did, on every non-API route) turns
 * them on for the whole process on Node 20, and from then on every promise of the partner API's hot paths
 * pays for them (~6-10 % of a get's CPU). The real entry point (API role) in its own process, asked through
 * a preloaded probe (test/support/promise-hooks-probe.ts).
 */
const ROOT = join(__dirname, '..', '..');
const ADMIN_TOKEN = 'log-context-admin-token-0123456789';
let child: ChildProcess;
let publicUrl: string;
let adminUrl: string;

function promiseHooks(): Promise<boolean> {
  return new Promise((resolve) => {
    child.once('message', (m: { promiseHooks: boolean }) => resolve(m.promiseHooks));
    child.send('promise-hooks?');
  });
}

beforeAll(async () => {
  const env = testEnv();
  const port = await findFreePort();
  const adminPort = await findFreePort();
  publicUrl = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  child = spawn(process.execPath, ['-r', '@swc-node/register', '-r', './test/support/promise-hooks-probe.ts', 'src/main.ts', '--api'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: `${env.redisPrefix}-log-context`,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_TOKEN,
      ONBOARDING_TOKEN_SECRET: 'log-context-onboarding-secret-0123456789',
      PUBLIC_URL: publicUrl,
      CHAIN_TEST_RPC_URL: env.rpcUrl,
      CHAIN_TEST_CHAIN_ID: env.chainId,
      CHAIN_TEST_TOKEN_ADDRESS: env.token,
      CHAIN_TEST_CONFIRMATIONS: '1',
    },
  });
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode})`);
    const r = await fetch(`${publicUrl}/api/v1/requests`).catch(() => null);
    return r?.status === 401;
  }, 60000, 200);
}, 90000);

afterAll(async () => {
  await killProcess(child);
});

it('serving health, onboarding, pay pages and admin leaves the promise hooks off', async () => {
  // The probe itself tells them apart: off after partner-API calls only.
  expect(await promiseHooks()).toBe(false);
  expect((await call(publicUrl, 'GET', '/health')).status).toBeLessThan(600);
  expect((await call(publicUrl, 'GET', `/onboarding/api/${'x'.repeat(43)}`)).status).toBe(404);
  expect((await call(publicUrl, 'GET', '/pay/00000000-0000-4000-8000-000000000000')).status).toBeLessThan(500);
  expect((await call(adminUrl, 'GET', '/admin/api/partners/00000000-0000-4000-8000-000000000000', { key: ADMIN_TOKEN })).status).toBeLessThan(500);
  expect((await call(publicUrl, 'GET', '/api/v1/requests')).status).toBe(401);
  expect(await promiseHooks()).toBe(false);
}, 60000);
