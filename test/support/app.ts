import { randomBytes } from 'node:crypto';
import type { Extensions } from '../../src/app.module';
import { start, type Running } from '../../src/bootstrap';
import { loadConfig, type AppConfig } from '../../src/config/config';
import { testEnv } from './test-env';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** The environment a test service runs with; `env` overrides any variable. */
/**
 * The environment variables a test service runs with; `env` overrides any of them. Also what a test hands
 * to a separate `src/main.ts` process so it joins the same database, chain and (when given) Redis prefix.
 */
export function testEnvVars(env: Record<string, string> = {}): Record<string, string> {
  const t = testEnv();
  return {
    // Development defaults (ADMIN_TOKEN aside, set below) apply only with NODE_ENV exactly test or development.
    NODE_ENV: 'test',
    DATABASE_URL: t.databaseUrl,
    REDIS_URL: t.redisUrl,
    // Each service gets its own queues and counters unless a test shares them on purpose (scale-out).
    REDIS_PREFIX: `${t.redisPrefix}-${randomBytes(3).toString('hex')}`,
    PORT: '0',
    ADMIN_PORT: '0',
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://localhost:3999',
    KEY_PREFIX: 'prs',
    CHAIN_TEST_RPC_URL: t.rpcUrl,
    CHAIN_TEST_CHAIN_ID: t.chainId,
    CHAIN_TEST_TOKEN_ADDRESS: t.token,
    CHAIN_TEST_CONFIRMATIONS: '1',
    CHAIN_LIVE_RPC_URL: t.rpcUrl,
    CHAIN_LIVE_CHAIN_ID: t.chainId,
    CHAIN_LIVE_TOKEN_ADDRESS: t.token,
    CHAIN_LIVE_CONFIRMATIONS: '1',
    RATES: 'usd:1,eur:0.92,jpy:150.25,inr:83.2,kwd:0.307',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    ...env,
  };
}

export function testConfig(env: Record<string, string> = {}): AppConfig {
  return loadConfig(testEnvVars(env));
}

export interface TestService extends Running {
  config: AppConfig;
  publicUrl: string;
  adminUrl: string;
}

/** A real service (both listeners, optionally the worker) on ephemeral ports against the run's database. */
export async function startService(
  opts: Extensions & { env?: Record<string, string>; worker?: boolean } = {},
): Promise<TestService> {
  const config = testConfig(opts.env);
  const running = await start(config, { http: true, worker: opts.worker ?? false }, {
    logger: false,
    chain: opts.chain,
    rates: opts.rates,
    plans: opts.plans,
  });
  return { ...running, config, publicUrl: running.publicUrl!, adminUrl: running.adminUrl! };
}

/**
 * A service with its worker whose test mode alone (live off) reads `token` on the node at `rpcUrl`, verifies
 * at `confirmations`, and scans, verifies and re-reads verified claims often (finality every `finalityMs`);
 * `env` adds.
 */
export function startFinalityService(
  rpcUrl: string,
  token: string,
  confirmations: number,
  finalityMs: number,
  env: Record<string, string> = {},
): Promise<TestService> {
  return startService({
    worker: true,
    env: {
      CHAIN_TEST_RPC_URL: rpcUrl,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      CHAIN_TEST_CONFIRMATIONS: String(confirmations),
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      FINALITY_CHECK_INTERVAL_MS: String(finalityMs),
      CHAIN_RPC_TIMEOUT_MS: '2000',
      ...env,
    },
  });
}
