/**
 * `npm run sandbox`: everything needed to try the service on this machine, in one process tree.
 * A local EVM node with the test token, the database migrated, a demo partner with a fresh test key, an
 * onboarded merchant and a funded payer wallet, the API and the worker running; then it prints what to
 * copy and paste. Ctrl-C stops it all.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { start } from '../src/bootstrap';
import { loadConfig } from '../src/config/config';
import { migrate } from '../src/database/data-source';
import { DEV_KEYS, deployToken, mint, startLocalNode } from './chain/local-node';

const CHAIN_PORT = Number(process.env.SANDBOX_CHAIN_PORT ?? 8545);
const ADMIN_TOKEN = process.env.ADMIN_TOKEN ?? 'sandbox-admin-token';
const PAYER_KEY = DEV_KEYS[1];
const MERCHANT_KEY = DEV_KEYS[3];
import { SANDBOX_FILE } from './sandbox-file';

async function json(url: string, method: string, body?: unknown, auth?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await res.json().catch(() => ({}));
  if (res.status >= 400) throw new Error(`${method} ${url} → ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

async function main(): Promise<void> {
  console.log('starting the local chain …');
  const node = await startLocalNode({ port: CHAIN_PORT });
  // Blocks every 2 s, so confirmations accrue the way they would on a real chain.
  await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_setIntervalMining', params: [2000] }),
  });
  const token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  const payer = new Wallet(PAYER_KEY);
  await mint(node.url, token, payer.address, 1_000_000n * 10n ** 6n);

  const env = {
    ...process.env,
    ADMIN_TOKEN,
    CHAIN_TEST_RPC_URL: process.env.CHAIN_TEST_RPC_URL ?? node.url,
    CHAIN_TEST_CHAIN_ID: process.env.CHAIN_TEST_CHAIN_ID ?? '31337',
    CHAIN_TEST_TOKEN_ADDRESS: token,
    CHAIN_TEST_CONFIRMATIONS: process.env.CHAIN_TEST_CONFIRMATIONS ?? '2',
    RATES: process.env.RATES ?? 'usd:1,eur:0.92,jpy:150.25,inr:83.2',
    WEBHOOK_ALLOW_PRIVATE_URLS: process.env.WEBHOOK_ALLOW_PRIVATE_URLS ?? 'true',
    VERIFY_POLL_MS: process.env.VERIFY_POLL_MS ?? '1000',
    CHAIN_SCAN_INTERVAL_MS: process.env.CHAIN_SCAN_INTERVAL_MS ?? '2000',
  };
  const config = loadConfig(env);
  console.log('migrating the database …');
  await migrate(config.databaseUrl);
  const running = await start(config, { http: true, worker: true });
  const api = running.publicUrl!.replace('localhost', '127.0.0.1');
  const adminApi = `${running.adminUrl}/admin/api`;

  // The demo partner: created once, found again on later runs (its slug is taken).
  let partnerId: string;
  try {
    partnerId = (await json(`${adminApi}/partners`, 'POST', { slug: 'demo', name: 'Demo Partner', default_currency: 'usd' }, ADMIN_TOKEN)).partner_id;
  } catch {
    const { Client } = await import('pg');
    const c = new Client({ connectionString: config.databaseUrl });
    await c.connect();
    partnerId = (await c.query(`SELECT id FROM partners WHERE slug = 'demo'`)).rows[0].id;
    await c.end();
  }
  const key = (await json(`${adminApi}/partners/${partnerId}/keys`, 'POST', { mode: 'test', label: 'sandbox' }, ADMIN_TOKEN)).api_key as string;

  // The demo merchant, taken through the real onboarding flow with its own wallet's signature.
  const merchantWallet = new Wallet(MERCHANT_KEY);
  const merchant = await json(`${api}/api/v1/merchants`, 'POST', { display_name: 'Demo Coffee', wallet_address: merchantWallet.address }, key);
  if (merchant.onboarding_status !== 'complete') {
    const tokenPart = String(merchant.onboarding_url).split('/').pop()!;
    const state = await json(`${api}/onboarding/api/${tokenPart}`, 'GET');
    const message = new SiweMessage({
      domain: state.siwe.domain, address: merchantWallet.address, uri: state.siwe.uri, version: '1',
      chainId: 31337, nonce: state.nonce, statement: 'Connect this wallet to receive payments.', issuedAt: new Date().toISOString(),
    }).prepareMessage();
    await json(`${api}/onboarding/api/${tokenPart}/wallet`, 'POST', { message, signature: await merchantWallet.signMessage(message) });
    await json(`${api}/onboarding/api/${tokenPart}/complete`, 'POST', { accept_terms: true });
  }

  mkdirSync(join(__dirname, '..', '.tmp'), { recursive: true });
  writeFileSync(SANDBOX_FILE, JSON.stringify({ api, apiKey: key, rpcUrl: node.url, token, payerKey: PAYER_KEY }, null, 2));

  console.log(`
Sandbox ready.
  partner API      ${running.publicUrl}/api/v1   (also on the admin listener ${running.adminUrl})
  admin API        ${adminApi}   (Authorization: Bearer ${ADMIN_TOKEN})
  local chain      ${node.url}  chain 31337, token TUSD ${token}
  test API key     ${key}
  merchant         ${merchant.merchant_id}

Create a payment request:
  curl -s -X POST ${running.publicUrl}/api/v1/requests/create \\
    -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' \\
    -d '{"account_id":"${merchant.merchant_id}","fiat_amount_int":1250,"metadata":{"order":"A-1"}}'

Open its pay_page_url in a browser, or pay it from the command line with the funded payer wallet:
  npm run sandbox:pay <request_id>

Ctrl-C stops the service and the chain.`);

  const stop = async () => {
    await running.close().catch(() => undefined);
    await node.stop();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
