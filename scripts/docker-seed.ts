/**
 * The one-shot `seed` service of docker-compose.yml, once the API is ready: the demo partner (found again on
 * later runs), a fresh test key, a merchant onboarded through the real flow (its wallet signs the SIWE
 * message) and a summary with copy-paste commands. What `docker-pay` needs goes to SANDBOX_OUT.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Wallet } from 'ethers';
import { Client } from 'pg';
import { SiweMessage } from 'siwe';
import { DEV_KEYS } from './chain/local-node';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] || fallback;
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const API_URL = env('API_URL', 'http://api:3000');
const ADMIN_API_URL = env('ADMIN_API_URL', 'http://api:3001');
const ADMIN_TOKEN = env('ADMIN_TOKEN');
const HOST_API_URL = env('HOST_API_URL', 'http://localhost:3000');
const SANDBOX_OUT = env('SANDBOX_OUT', '/data/sandbox.json');
const MERCHANT_KEY = DEV_KEYS[3];

async function json(url: string, method: string, body?: unknown, auth?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await res.json().catch(() => ({}))) as any;
  if (res.status >= 400) throw Object.assign(new Error(`${method} ${url} → ${res.status} ${parsed.error ?? ''}`), { status: res.status });
  return parsed;
}

async function demoPartner(): Promise<string> {
  try {
    const created = await json(`${ADMIN_API_URL}/admin/api/partners`, 'POST', { slug: 'demo', name: 'Demo Partner', default_currency: 'usd' }, ADMIN_TOKEN);
    return created.partner_id as string;
  } catch (e) {
    if ((e as { status?: number }).status !== 409) throw e;
    // Seeded before: the slug is taken. The admin API finds partners by id only, so look it up.
    const db = new Client({ connectionString: env('DATABASE_URL') });
    await db.connect();
    try {
      return (await db.query<{ id: string }>(`SELECT id FROM partners WHERE slug = 'demo'`)).rows[0].id;
    } finally {
      await db.end();
    }
  }
}

async function main(): Promise<void> {
  const partnerId = await demoPartner();
  const key = (await json(`${ADMIN_API_URL}/admin/api/partners/${partnerId}/keys`, 'POST', { mode: 'test', label: 'docker sandbox' }, ADMIN_TOKEN)).api_key as string;

  const wallet = new Wallet(MERCHANT_KEY);
  const merchant = await json(`${API_URL}/api/v1/merchants`, 'POST', { display_name: 'Demo Coffee', wallet_address: wallet.address }, key);
  if (merchant.onboarding_status !== 'complete') {
    const token = String(merchant.onboarding_url).split('/').pop()!;
    const state = await json(`${API_URL}/onboarding/api/${token}`, 'GET');
    const message = new SiweMessage({
      domain: state.siwe.domain,
      address: wallet.address,
      statement: 'Connect this wallet to receive payments.',
      uri: state.siwe.uri,
      version: '1',
      chainId: 31337,
      nonce: state.nonce,
      issuedAt: new Date().toISOString(),
    }).prepareMessage();
    await json(`${API_URL}/onboarding/api/${token}/wallet`, 'POST', { message, signature: await wallet.signMessage(message) });
    await json(`${API_URL}/onboarding/api/${token}/complete`, 'POST', { accept_terms: true });
  }

  mkdirSync(dirname(SANDBOX_OUT), { recursive: true });
  writeFileSync(SANDBOX_OUT, JSON.stringify({ apiKey: key, merchantId: merchant.merchant_id, partnerId }, null, 2));

  console.log(`
Sandbox seeded.
  partner API     ${HOST_API_URL}/api/v1      docs ${HOST_API_URL}/docs
  test API key    ${key}
  merchant        ${merchant.merchant_id} (onboarded, wallet ${wallet.address.toLowerCase()})
  queue board     http://localhost:3001/admin/queues (user admin, password ADMIN_TOKEN)

Create a payment request:
  curl -s -X POST ${HOST_API_URL}/api/v1/requests/create \\
    -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' \\
    -d '{"account_id":"${merchant.merchant_id}","fiat_amount_int":1250,"metadata":{"order":"A-1"}}'

Pay it from the funded payer wallet and wait for verification:
  docker compose run --rm seed node dist/scripts/docker-pay.js <request_id>
`);
}

main().catch((e: Error) => {
  console.error(`seed failed: ${e.message}`);
  process.exit(1);
});
