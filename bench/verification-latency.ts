/**
 * Verification latency (issue 3): over N payments, the time from the block that completes the
 * confirmations to proof_verified being readable through the partner API. Runs its own Hardhat node and
 * the service (API + worker) in this process against the `prs_bench_verify` database.
 *   node -r @swc-node/register bench/verification-latency.ts   (PAYMENTS=50, CONFIRMATIONS=2, VERIFY_POLL_MS=…)
 */
import { Wallet } from 'ethers';
import { Client } from 'pg';
import { start } from '../src/bootstrap';
import { loadConfig } from '../src/config/config';
import { migrate } from '../src/database/data-source';
import { DEV_KEYS, deployToken, findFreePort, mine, mint, startLocalNode, transferToken } from '../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner } from '../test/factories/partners';

const PAYMENTS = Number(process.env.PAYMENTS ?? 50);
const CONFIRMATIONS = Number(process.env.CONFIRMATIONS ?? 2);

async function main(): Promise<void> {
  const dbUrl = 'postgres://postgres@127.0.0.1:5432/prs_bench_verify';
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS prs_bench_verify WITH (FORCE)');
  await admin.end();
  await migrate(dbUrl);
  const node = await startLocalNode({ port: await findFreePort() });
  const token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD' });
  await mint(node.url, token, new Wallet(DEV_KEYS[1]).address, 10n ** 15n);
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: dbUrl,
    REDIS_PREFIX: `prs-bench-verify-${Date.now()}`,
    PORT: '0', ADMIN_PORT: '0', ADMIN_TOKEN: 'test-admin-token-0123456789', PUBLIC_URL: 'http://localhost:3999',
    CHAIN_TEST_RPC_URL: node.url, CHAIN_TEST_CHAIN_ID: '31337', CHAIN_TEST_TOKEN_ADDRESS: token,
    CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS),
    // The poll below reads far more often than a partner may.
    RATE_LIMIT_SCALE: '10000',
  });
  const running = await start(config, { http: true, worker: true }, { logger: process.env.BENCH_LOGS ? undefined : false });
  const svc = { ...running, config, publicUrl: running.publicUrl!, adminUrl: running.adminUrl! };
  const partner = await createPartner(svc);
  const merchant = await createOnboardedMerchant(svc, partner.testKey);
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${svc.publicUrl}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${partner.testKey}` } }).then((r) => r.json() as Promise<any>);

  const latencies: number[] = [];
  for (let i = 0; i < PAYMENTS; i++) {
    const r = await api('/api/v1/requests/create', { method: 'POST', body: JSON.stringify({ account_id: merchant.id, fiat_amount_int: 100 + i }) });
    const tx = await transferToken(node.url, token, DEV_KEYS[1], merchant.wallet.address, BigInt(r.amount));
    await fetch(`${svc.publicUrl}/pay/api/${r.request_id}/proof`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tx_hash: tx.txHash }) });
    if (CONFIRMATIONS > 2) await mine(node.url, CONFIRMATIONS - 2);
    // Spread the moment within the poll cycle, as real blocks would land.
    await new Promise((res) => setTimeout(res, Math.random() * config.verifyPollMs));
    await mine(node.url, CONFIRMATIONS > 1 ? 1 : 0);
    const t0 = performance.now();
    for (;;) {
      const got = await api(`/api/v1/requests/${r.request_id}`);
      if (got.proof_status === 'verified') break;
      await new Promise((res) => setTimeout(res, 10));
    }
    latencies.push(performance.now() - t0);
  }
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  console.log(JSON.stringify({
    payments: PAYMENTS, confirmations: CONFIRMATIONS, verify_poll_ms: config.verifyPollMs,
    chain_scan_interval_ms: config.chainScanIntervalMs,
    median_ms: Math.round(pct(0.5)), p95_ms: Math.round(pct(0.95)), max_ms: Math.round(latencies[latencies.length - 1]),
  }));
  await running.close();
  await node.stop();
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
