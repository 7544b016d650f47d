import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Wallet } from 'ethers';
import { DEV_KEYS, findFreePort, mint, transferToken } from '../../scripts/chain/local-node';
import { signOnboarding, tokenOf, uniqueSlug } from '../factories/partners';
import type { TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call, type Reply } from '../support/http';
import { Receiver } from '../support/receiver';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { killProcess } from '../support/worker-process';

/**
 * Issue 6 item 4, logs: the real entry point (src/main.ts, API and worker in one process) with its JSON logs
 * going to a file at LOG_LEVEL=trace, taken through a full flow — partner, keys (one revoked), webhook URL
 * and secret rotation, a portal sign-in (wrong and right password, CSRF token, session cookie), merchant,
 * onboarding with a wallet signature, requests (create, get, list, cancel),
 * a payment verified on chain and its signed webhook, 401s, 404s and a 500 on an onboarding URL. Then every
 * credential the flow saw is searched for in every byte of the log: none may appear.
 */
const ROOT = join(__dirname, '..', '..');
const LOG_FILE = join(ROOT, '.tmp', 'ops-logs.log');
const ADMIN_TOKEN = `logs-admin-${randomBytes(12).toString('hex')}`;
const ONBOARDING_SECRET = `logs-onboarding-${randomBytes(12).toString('hex')}`;

let child: ChildProcess;
let publicUrl: string;
let adminUrl: string;
let receiver: Receiver;
/** Every credential the flow issued or sent. */
const secrets = new Map<string, string>();
const remember = (what: string, value: unknown) => {
  expect(typeof value).toBe('string');
  secrets.set(what, value as string);
};

async function admin(method: string, path: string, body?: unknown): Promise<Reply> {
  return call(adminUrl, method, `/admin/api${path}`, { key: ADMIN_TOKEN, body });
}

beforeAll(async () => {
  const env = testEnv();
  const port = await findFreePort();
  const adminPort = await findFreePort();
  publicUrl = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  receiver = await Receiver.start();
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const fd = openSync(LOG_FILE, 'w');
  child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', fd, fd],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'development',
      LOG_LEVEL: 'trace',
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: `${env.redisPrefix}-logs-${randomBytes(3).toString('hex')}`,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      ADMIN_TOKEN,
      ONBOARDING_TOKEN_SECRET: ONBOARDING_SECRET,
      PUBLIC_URL: publicUrl,
      CHAIN_TEST_RPC_URL: env.rpcUrl,
      CHAIN_TEST_CHAIN_ID: env.chainId,
      CHAIN_TEST_TOKEN_ADDRESS: env.token,
      CHAIN_TEST_CONFIRMATIONS: '1',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      WORKER_ADMIN_PORT: '0',
    },
  });
  closeSync(fd);
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode}):\n${readFileSync(LOG_FILE, 'utf8')}`);
    const r = await fetch(`${publicUrl}/health/live`).catch(() => null);
    return r?.status === 200;
  }, 60000, 200);
}, 90000);

afterAll(async () => {
  await killProcess(child);
  await receiver?.close();
  await closeSql();
});

it('runs the whole flow', async () => {
  remember('admin token', ADMIN_TOKEN);
  remember('onboarding token secret', ONBOARDING_SECRET);
  remember('queue board basic credentials', Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64'));

  // Partner, keys (one revoked), webhook with secret rotation.
  const p = await admin('POST', '/partners', { slug: uniqueSlug('logs'), name: 'Logs Partner', default_currency: 'usd' });
  expect(p.status).toBe(201);
  const partnerId = p.body.partner_id as string;
  const keys: Record<string, Reply> = {};
  for (const [name, body] of Object.entries({
    test: { mode: 'test' },
    live: { mode: 'live' },
    readonly: { mode: 'test', scopes: ['requests:read'], label: 'read only' },
    revoked: { mode: 'test' },
  })) {
    keys[name] = await admin('POST', `/partners/${partnerId}/keys`, body);
    expect(keys[name].status).toBe(201);
    remember(`${name} API key`, keys[name].body.api_key);
    // The part after the prefix is the secret: it must not appear on its own either.
    remember(`${name} API key secret`, (keys[name].body.api_key as string).split('_').slice(2).join('_'));
  }
  const testKey = keys.test.body.api_key as string;
  expect((await admin('DELETE', `/partners/${partnerId}/keys/${keys.revoked.body.key_id}`)).status).toBe(200);

  const hook = await admin('PUT', `/partners/${partnerId}/webhook`, { url: receiver.url, enabled: true });
  expect(hook.status).toBe(200);
  remember('webhook secret', hook.body.secret);
  const rotated = await admin('POST', `/partners/${partnerId}/webhook/rotate`);
  expect(rotated.status).toBe(200);
  remember('rotated webhook secret', rotated.body.secret);
  expect((await admin('POST', `/partners/${partnerId}/webhook/confirm-rotation`)).status).toBe(200);

  // A portal user: its password (and a wrong one), the login form's CSRF token and the session cookie.
  const email = `logs-${randomBytes(4).toString('hex')}@example.com`;
  const password = `pw-${randomBytes(12).toString('base64url')}`;
  remember('portal password', password);
  remember('wrong portal password', `${password}-wrong`);
  expect((await admin('POST', `/partners/${partnerId}/users`, { email, password })).status).toBe(201);
  const form = await fetch(`${publicUrl}/portal/login`, { redirect: 'manual' });
  const loginCookie = (form.headers.get('set-cookie') ?? '').split(';')[0];
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  remember('portal login cookie', loginCookie.split('=')[1]);
  remember('portal login CSRF token', csrf);
  const signIn = (pw: string) =>
    fetch(`${publicUrl}/portal/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
      body: new URLSearchParams({ email, password: pw, _csrf: csrf! }).toString(),
    });
  expect((await signIn(`${password}-wrong`)).status).toBe(401);
  const signedIn = await signIn(password);
  expect(signedIn.status).toBe(303);
  const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0];
  remember('portal session cookie', session.split('=')[1]);
  expect((await fetch(`${publicUrl}/portal/keys`, { headers: { cookie: session } })).status).toBe(200);

  // Merchant and its onboarding, with a wallet signature.
  const wallet = Wallet.createRandom();
  const m = await call(publicUrl, 'POST', '/api/v1/merchants', {
    key: testKey,
    body: { display_name: 'Logs Shop', email: 'shop@example.com', wallet_address: wallet.address },
  });
  expect(m.status).toBe(201);
  const merchantId = m.body.merchant_id as string;
  const token = tokenOf(m.body.onboarding_url);
  remember('onboarding token', token);
  const svcLike = { publicUrl, adminUrl } as TestService;
  const proof = await signOnboarding(svcLike, token, wallet as unknown as Wallet);
  remember('wallet signature', proof.signature);
  expect((await call(publicUrl, 'GET', `/onboarding/${token}`)).status).toBeLessThan(500);
  expect((await call(publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: proof })).status).toBe(200);

  // A 500 on an onboarding URL: the error log line names the path, which holds the token. For a moment a
  // constraint (on this merchant only) makes completing fail in Postgres, as an outage would.
  await sql(`ALTER TABLE merchants ADD CONSTRAINT ops_logs_test_fail CHECK (id <> '${merchantId}' OR onboarding_status <> 'complete') NOT VALID`);
  let failed: Reply;
  try {
    failed = await call(publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });
  } finally {
    await sql('ALTER TABLE merchants DROP CONSTRAINT ops_logs_test_fail');
  }
  expect(failed.status).toBe(500);
  expect(failed.body.error).toBe('internal_error');
  const failedRequestId = failed.body.request_id as string;
  expect(failedRequestId).toBeTruthy();

  expect((await call(publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } })).status).toBe(200);
  // The token no longer works: a 4xx, logged at info with its path.
  expect((await call(publicUrl, 'GET', `/onboarding/api/${token}`)).status).toBeGreaterThanOrEqual(400);

  // Requests: create (idempotent), get, list, cancel.
  const body = { account_id: merchantId, fiat_amount_int: 2500, idempotency_key: randomBytes(24).toString('base64url'), metadata: { order: 'L-1' } };
  const created = await call(publicUrl, 'POST', '/api/v1/requests/create', { key: testKey, body });
  expect(created.status).toBe(201);
  expect((await call(adminUrl, 'POST', '/api/v1/requests/create', { key: testKey, body })).status).toBe(200);
  expect((await call(publicUrl, 'GET', `/api/v1/requests/${created.body.request_id}`, { key: keys.readonly.body.api_key })).status).toBe(200);
  expect((await call(publicUrl, 'GET', `/api/v1/requests?account_id=${merchantId}&limit=10`, { key: testKey })).status).toBe(200);
  expect((await call(publicUrl, 'GET', '/api/v1/accounts', { key: testKey })).status).toBe(200);
  const other = await call(publicUrl, 'POST', '/api/v1/requests/create', { key: testKey, body: { account_id: merchantId, fiat_amount_int: 999 } });
  expect((await call(publicUrl, 'POST', `/api/v1/requests/${other.body.request_id}/cancel`, { key: testKey })).status).toBe(200);

  // 401s and 403s with every kind of bad credential, and a 404 on a made-up onboarding token.
  const madeUp = `prs_test_${randomBytes(32).toString('base64url')}`;
  remember('made-up API key', madeUp);
  const madeUpToken = randomBytes(32).toString('base64url');
  remember('made-up onboarding token', madeUpToken);
  expect((await call(publicUrl, 'GET', '/api/v1/requests', { key: madeUp })).status).toBe(401);
  expect((await call(publicUrl, 'GET', '/api/v1/requests', { key: keys.revoked.body.api_key })).status).toBe(401);
  expect((await call(publicUrl, 'GET', '/api/v1/requests', { headers: { authorization: `Basic ${Buffer.from(`u:${madeUp}`).toString('base64')}` } })).status).toBe(401);
  expect((await call(publicUrl, 'POST', '/api/v1/requests/create', { key: keys.readonly.body.api_key, body })).status).toBe(403);
  expect((await call(adminUrl, 'GET', `/admin/api/partners/${partnerId}`, { key: `${ADMIN_TOKEN}-wrong` })).status).toBe(401);
  expect((await call(publicUrl, 'GET', `/onboarding/api/${madeUpToken}`)).status).toBe(404);
  expect((await call(publicUrl, 'GET', `/api/v1/requests/${created.body.request_id}?api_key=${madeUp}`, { key: testKey })).status).toBe(200);

  // The queue board and metrics, with and without credentials.
  expect((await call(adminUrl, 'GET', '/admin/queues', { headers: { authorization: `Basic ${secrets.get('queue board basic credentials')}` } })).status).toBe(200);
  expect((await call(adminUrl, 'GET', '/admin/queues')).status).toBe(401);
  expect((await call(adminUrl, 'GET', '/metrics')).status).toBe(200);

  // A payment verified on chain, and the signed webhooks it causes.
  const { rpcUrl, token: tokenAddress } = testEnv();
  const payer = DEV_KEYS[1];
  await mint(rpcUrl, tokenAddress, new Wallet(payer).address, BigInt(created.body.amount));
  const tx = await transferToken(rpcUrl, tokenAddress, payer, wallet.address, BigInt(created.body.amount));
  expect((await call(publicUrl, 'POST', `/pay/api/${created.body.request_id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
  await waitFor(async () => {
    const r = await call(publicUrl, 'GET', `/api/v1/requests/${created.body.request_id}`, { key: testKey });
    return r.body.proof_status === 'verified';
  }, 30000, 100);
  const hooks = await receiver.waitUntil((calls) => calls.some((c) => c.json().event === 'payment.proof_verified'), 30000);
  for (const [i, c] of hooks.entries()) {
    const header = String(c.headers['x-service-signature']);
    for (const part of header.split(',').filter((x) => x.startsWith('v1='))) remember(`webhook signature ${i}`, part.slice(3));
  }

  // Stop the service the way an orchestrator does, so everything buffered is written.
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;

  const log = readFileSync(LOG_FILE, 'utf8');
  const lines = log.split('\n').filter((l) => l.trim() !== '');
  expect(lines.length).toBeGreaterThan(30);

  // 1. Nothing secret, anywhere in the output.
  const leaks = [...secrets].filter(([, value]) => log.includes(value)).map(([what]) => what);
  expect(leaks).toEqual([]);

  // 2. Every line is one JSON object (no stray console output).
  const entries = lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, any>;
    } catch {
      throw new Error(`not a JSON log line: ${l}`);
    }
  });

  // 3. Each response line carries its request id; successful calls are logged at debug, 4xx at info.
  const responses = entries.filter((e) => e.http);
  expect(responses.length).toBeGreaterThan(20);
  for (const e of responses) expect(typeof e.reqId).toBe('string');
  const createdLine = responses.find((e) => e.http.route === '/api/v1/requests/create' && e.http.status === 201);
  expect(createdLine?.level).toBe('debug');
  const unauthorized = responses.find((e) => e.http.status === 401 && e.http.route === '/api/v1/requests');
  expect(unauthorized?.level).toBe('info');
  // The onboarding path is logged without its token.
  const onboardingLines = responses.filter((e) => String(e.http.path).startsWith('/onboarding/'));
  expect(onboardingLines.length).toBeGreaterThan(0);
  for (const e of onboardingLines) expect(e.http.path).toMatch(/^\/onboarding\/(api\/)?\[REDACTED\]/);

  // 4. The 500: its error line and its response line share the request id shown to the client.
  const of500 = entries.filter((e) => e.reqId === failedRequestId);
  expect(of500.some((e) => e.level === 'error' && e.context === 'Errors')).toBe(true);
  expect(of500.some((e) => e.http?.status === 500)).toBe(true);
}, 120000);
