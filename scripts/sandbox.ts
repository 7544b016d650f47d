/**
 * `npm run sandbox`: everything needed to try the service on this machine, in one process tree.
 * A local EVM node with the test token, the database migrated, a demo partner with a fresh test key, an
 * onboarded merchant and a funded payer wallet, a local SMTP catcher for the emails, the API and the worker
 * running; then it prints what to copy and paste. Ctrl-C stops it all.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { start } from '../src/bootstrap';
import { loadConfig } from '../src/config/config';
import { migrate } from '../src/database/data-source';
import { verifyWebhook, WebhookVerificationError } from '../sdk/webhook-verify/src/index';
import { DEV_KEYS, deployToken, mint, startLocalNode } from './chain/local-node';
import { SmtpCatcher } from './smtp-catcher';

const CHAIN_PORT = Number(process.env.SANDBOX_CHAIN_PORT ?? 8545);
const ADMIN_TOKEN = process.env.ADMIN_TOKEN ?? 'sandbox-admin-token';
const PAYER_KEY = DEV_KEYS[1];
const MERCHANT_KEY = DEV_KEYS[3];
const PORTAL_EMAIL = 'demo@partner.example';
const PORTAL_PASSWORD = 'sandbox-portal-password';

/**
 * The demo partner's webhook endpoint: a receiver on this machine that checks each delivery's signature with
 * the partners' helper (sdk/webhook-verify) and prints it, as a partner's server would.
 */
async function startWebhookReceiver(secrets: () => string[]): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      try {
        const event = verifyWebhook(raw, String(req.headers['x-service-signature'] ?? ''), secrets());
        if (event.event === 'ping') console.log(`[webhook] ping (the portal's test event; signature verified)`);
        else console.log(`[webhook] ${event.event} for ${event.request_id}: proof ${event.proof_status}, tx ${event.tx_hash ?? '-'} (signature verified, delivery ${event.delivery_id})`);
        res.writeHead(204).end();
      } catch (e) {
        console.log(`[webhook] refused a delivery: ${(e as Error).message}`);
        // As the receiver examples do: a stale timestamp (this clock off) is retried, a bad signature dropped.
        res.writeHead(e instanceof WebhookVerificationError && e.code === 'timestamp_out_of_tolerance' ? 503 : 400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(Number(process.env.SANDBOX_WEBHOOK_PORT ?? 0), '127.0.0.1', r));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}
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

  // Email goes to a local SMTP server (smtp-server) that prints what it catches, beside the [webhook] lines.
  const smtp = await SmtpCatcher.start(Number(process.env.SANDBOX_SMTP_PORT ?? 0));
  smtp.onMail((m) => console.log(`[email] to ${m.to.join(', ')} : ${m.subject}`));

  const env = {
    ...process.env,
    SMTP_URL: process.env.SMTP_URL ?? smtp.url,
    MAIL_FROM: process.env.MAIL_FROM ?? 'Demo Payments <receipts@sandbox.example>',
    // A local sandbox: the development defaults for ONBOARDING_TOKEN_SECRET and SECRET_KEY apply.
    NODE_ENV: 'development',
    ADMIN_TOKEN,
    CHAIN_TEST_RPC_URL: process.env.CHAIN_TEST_RPC_URL ?? node.url,
    CHAIN_TEST_CHAIN_ID: process.env.CHAIN_TEST_CHAIN_ID ?? '31337',
    CHAIN_TEST_TOKEN_ADDRESS: token,
    CHAIN_TEST_CONFIRMATIONS: process.env.CHAIN_TEST_CONFIRMATIONS ?? '2',
    RATES: process.env.RATES ?? 'usd:1,eur:0.92,jpy:150.25,inr:83.2',
    WEBHOOK_ALLOW_PRIVATE_URLS: process.env.WEBHOOK_ALLOW_PRIVATE_URLS ?? 'true',
    VERIFY_POLL_MS: process.env.VERIFY_POLL_MS ?? '1000',
    CHAIN_SCAN_INTERVAL_MS: process.env.CHAIN_SCAN_INTERVAL_MS ?? '2000',
    // JSON logs would bury the summary below; LOG_LEVEL=info brings them back.
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
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
  await json(`${adminApi}/partners/${partnerId}/users`, 'POST', { email: PORTAL_EMAIL, password: PORTAL_PASSWORD }, ADMIN_TOKEN).catch(() => undefined);

  // Webhooks to the local receiver. The secret is shown once, when first generated: a sandbox started again
  // on the same database rotates to get one it can show, and confirms at once.
  let secret = '';
  const receiverUrl = await startWebhookReceiver(() => [secret]);
  const hook = await json(`${adminApi}/partners/${partnerId}/webhook`, 'PUT', { url: receiverUrl, enabled: true }, ADMIN_TOKEN);
  if (hook.secret) secret = hook.secret;
  else {
    secret = (await json(`${adminApi}/partners/${partnerId}/webhook/rotate`, 'POST', undefined, ADMIN_TOKEN)).secret;
    await json(`${adminApi}/partners/${partnerId}/webhook/confirm-rotation`, 'POST', undefined, ADMIN_TOKEN);
  }

  // The demo merchant, taken through the real onboarding flow with its own wallet's signature.
  const merchantWallet = new Wallet(MERCHANT_KEY);
  const merchant = await json(`${api}/api/v1/merchants`, 'POST', { display_name: 'Demo Coffee', email: 'owner@demo-coffee.example', wallet_address: merchantWallet.address }, key);
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

  // One request ready to pay, so the tour can start at its pay page.
  const demo = await json(`${api}/api/v1/requests/create`, 'POST', { account_id: merchant.merchant_id, fiat_amount_int: 499, memo: 'Demo latte', customer_email: 'payer@example.com' }, key);

  mkdirSync(join(__dirname, '..', '.tmp'), { recursive: true });
  writeFileSync(
    SANDBOX_FILE,
    JSON.stringify({ api, publicUrl: config.publicUrl, apiKey: key, rpcUrl: node.url, token, payerKey: PAYER_KEY, merchantKey: MERCHANT_KEY }, null, 2),
  );

  console.log(`
Sandbox ready.
  partner API      ${running.publicUrl}/api/v1   (also on the admin listener ${running.adminUrl})
  admin API        ${adminApi}   (Authorization: Bearer ${ADMIN_TOKEN})
  local chain      ${node.url}  chain 31337, token TUSD ${token}
  test API key     ${key}
  merchant         ${merchant.merchant_id}
  partner portal   ${running.publicUrl}/portal/login   ${PORTAL_EMAIL} / ${PORTAL_PASSWORD}
  webhooks         delivered to ${receiverUrl}, verified with sdk/webhook-verify and printed below as [webhook]
  email            ${env.SMTP_URL === smtp.url ? `caught by the local SMTP server ${smtp.url} and printed below as [email]` : `sent through ${env.SMTP_URL}`}
  queue board      ${running.adminUrl}/admin/queues   admin / ${ADMIN_TOKEN}

Create a payment request:
  curl -s -X POST ${running.publicUrl}/api/v1/requests/create \\
    -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' \\
    -d '{"account_id":"${merchant.merchant_id}","fiat_amount_int":1250,"metadata":{"order":"A-1"}}'

Open its pay_page_url in a browser, or pay it from the command line with the funded payer wallet:
  npm run sandbox:pay <request_id>

The demo merchant's dashboard (its wallet is the local account ${merchantWallet.address}):
  sign in          npm run sandbox:dashboard   (prints a session cookie, curl calls, and the key for a browser wallet)
  in a browser     ${config.publicUrl}/dashboard

A request is waiting already (4.99 usd, customer_email payer@example.com):
  pay page         ${demo.pay_page_url}
  pay it           npm run sandbox:pay ${demo.request_id}

The payment is verified within seconds: its webhooks appear below as [webhook] lines, the payer's receipt
and the merchant's "payment received" note as [email] lines.
Ctrl-C stops the service and the chain.`);

  const stop = async () => {
    await running.close().catch(() => undefined);
    await node.stop();
    await smtp.down();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
