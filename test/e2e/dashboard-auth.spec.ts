import { createHash } from 'node:crypto';
import { AbiCoder, concat, getAddress, Interface, Wallet, zeroPadValue } from 'ethers';
import { loadArtifact } from '../../scripts/chain/compile-contracts';
import { deployContract } from '../../scripts/chain/local-node';
import { dashboardClient, dashboardMessage, dashboardNonce, postSession, sessionCookie, signInDashboard } from '../factories/dashboard';
import { createShellMerchant, randomWallet, siweProof } from '../factories/merchants';
import { admin, createOnboardedMerchant, createPartner, tokenOf as onboardingToken, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { TcpProxy } from '../support/tcp-proxy';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * DESIGN §5 "Sign-in" and §8: Sign-In with Ethereum with server-side single-use nonces, the signature checked
 * before the merchant, sessions stored hashed with a CSRF token, 7 days absolute and 1 hour idle.
 */
let svc: TestService;
let p: TestPartner;
let merchant: { id: string; wallet: Wallet };
beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, p.testKey);
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const digest = (token: string) => createHash('sha256').update(token).digest();
const tokenOf = (cookie: string) => cookie.slice('prs_dashboard='.length);

/** A sign-in attempt by `signer` for `address` (default: the signer's) with a fresh nonce unless given. */
async function attempt(signer: Wallet, o: Parameters<typeof dashboardMessage>[3] = {}) {
  const message = dashboardMessage(svc, signer.address, o.nonce ?? (await dashboardNonce(svc)), o);
  return postSession(svc, { message, signature: await signer.signMessage(message) });
}

describe('GET /dashboard/api/nonce', () => {
  it('hands out a fresh alphanumeric nonce, kept server-side for 10 minutes', async () => {
    const a = await call(svc.publicUrl, 'GET', '/dashboard/api/nonce');
    const b = await call(svc.publicUrl, 'GET', '/dashboard/api/nonce');
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ ok: true, nonce: expect.stringMatching(/^[A-Za-z0-9]{16,}$/) });
    expect(b.body.nonce).not.toBe(a.body.nonce);
    const [row] = await sql(`SELECT extract(epoch FROM expires_at - now()) AS ttl FROM dashboard_nonces WHERE nonce = $1`, [a.body.nonce]);
    expect(Number(row.ttl)).toBeGreaterThan(595);
    expect(Number(row.ttl)).toBeLessThanOrEqual(600);
  });
});

describe('POST /dashboard/api/session', () => {
  it('signs the merchant in: 200 {ok, merchant_id, csrf_token}, an HttpOnly Lax cookie on /dashboard for 7 days, stored hashed', async () => {
    const r = await attempt(merchant.wallet);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, merchant_id: merchant.id, csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    const line = r.headers.getSetCookie().find((c) => c.startsWith('prs_dashboard='))!;
    const attrs = line.split(';').map((s) => s.trim().toLowerCase());
    expect(attrs).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/dashboard', 'max-age=604800']));
    expect(attrs).not.toContain('secure'); // PUBLIC_URL is http here
    const token = tokenOf(sessionCookie(r));
    const rows = await sql(`SELECT id, merchant_id, csrf_token, extract(epoch FROM expires_at - created_at) AS ttl FROM dashboard_sessions WHERE merchant_id = $1`, [merchant.id]);
    const row = rows.find((x) => Buffer.compare(x.id, digest(token)) === 0);
    expect(row).toBeDefined();
    expect(Number(row.ttl)).toBeCloseTo(7 * 24 * 3600, 0);
    expect(row.csrf_token).toBe(r.body.csrf_token);
    // The table never holds the cookie's token itself.
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM dashboard_sessions WHERE encode(id, 'escape') = $1 OR csrf_token = $1`, [token]);
    expect(n).toBe(0);
  });

  it('a nonce is single use: the same signed message a second time is 401', async () => {
    const nonce = await dashboardNonce(svc);
    const message = dashboardMessage(svc, merchant.wallet.address, nonce);
    const body = { message, signature: await merchant.wallet.signMessage(message) };
    expect((await postSession(svc, body)).status).toBe(200);
    const again = await postSession(svc, body);
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ ok: false, error: 'invalid_signature' });
  });

  it('two sign-ins racing with one nonce: exactly one gets a session, the other is 401', async () => {
    for (let round = 0; round < 3; round++) {
      const message = dashboardMessage(svc, merchant.wallet.address, await dashboardNonce(svc));
      const signature = await merchant.wallet.signMessage(message);
      const before = await sql(`SELECT count(*)::int AS n FROM dashboard_sessions WHERE merchant_id = $1`, [merchant.id]);
      const replies = await Promise.all([postSession(svc, { message, signature }), postSession(svc, { message, signature })]);
      expect(replies.map((r) => r.status).sort()).toEqual([200, 401]);
      expect(replies.find((r) => r.status === 401)!.body.error).toBe('invalid_signature');
      const after = await sql(`SELECT count(*)::int AS n FROM dashboard_sessions WHERE merchant_id = $1`, [merchant.id]);
      expect(after[0].n - before[0].n).toBeLessThanOrEqual(1);
      expect(await sql(`SELECT 1 FROM dashboard_sessions WHERE id = $1`, [digest(tokenOf(sessionCookie(replies.find((r) => r.status === 200)!)))])).toHaveLength(1);
    }
  });

  it('an expired nonce (over 10 minutes old) is 401, and so is a nonce the service never issued', async () => {
    const nonce = await dashboardNonce(svc);
    await sql(`UPDATE dashboard_nonces SET expires_at = now() - interval '1 second' WHERE nonce = $1`, [nonce]);
    expect((await attempt(merchant.wallet, { nonce })).body).toMatchObject({ ok: false, error: 'invalid_signature' });
    const made = await attempt(merchant.wallet, { nonce: 'abcdef0123456789abcdef0123456789' });
    expect(made.status).toBe(401);
    expect(made.body.error).toBe('invalid_signature');
  });

  it.each([
    ['another domain', { domain: 'evil.example' }],
    ['the domain without its port', { domain: 'localhost' }],
    ['another uri', { uri: 'http://localhost:3999/onboarding/x' }],
    ['an expired message', { expirationTime: new Date(Date.now() - 1000).toISOString() }],
    // PUBLIC_URL is http here: a message made for an https page is another origin (and the other way round).
    ['another scheme', { scheme: 'https' }],
  ])('%s → 401 invalid_signature', async (_, o) => {
    const r = await attempt(merchant.wallet, o);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(r.headers.getSetCookie()).toEqual([]);
  });

  it('a message naming PUBLIC_URL\'s own scheme signs in, as one naming none does', async () => {
    expect(new URL(svc.config.publicUrl).protocol).toBe('http:');
    expect((await attempt(merchant.wallet, { scheme: 'http' })).status).toBe(200);
    // Schemes are case-insensitive (RFC 3986).
    expect((await attempt(merchant.wallet, { scheme: 'HTTP' })).status).toBe(200);
  });

  it('a signature by another key is 401, and so is text that is not EIP-4361', async () => {
    const message = dashboardMessage(svc, merchant.wallet.address, await dashboardNonce(svc));
    const r = await postSession(svc, { message, signature: await randomWallet().signMessage(message) });
    expect(r.status).toBe(401);
    expect(r.body.error).toBe('invalid_signature');
    const junk = await postSession(svc, { message: 'hello', signature: '0x1234' });
    expect(junk.status).toBe(401);
    expect(junk.body.error).toBe('invalid_signature');
  });

  it('the signature is checked first: a bad one for a wallet no merchant has is 401, a good one 403 not_a_merchant', async () => {
    const stranger = randomWallet();
    const message = dashboardMessage(svc, stranger.address, await dashboardNonce(svc));
    const bad = await postSession(svc, { message, signature: await randomWallet().signMessage(message) });
    expect(bad.status).toBe(401);
    const good = await attempt(stranger);
    expect(good.status).toBe(403);
    expect(good.body).toMatchObject({ ok: false, error: 'not_a_merchant' });
  });

  it('a merchant that has not completed onboarding is not_a_merchant', async () => {
    const wallet = randomWallet();
    await createShellMerchant(svc, p.testKey, { wallet_address: wallet.address });
    const r = await attempt(wallet);
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('not_a_merchant');
  });

  it('a malformed body is 400 invalid_request; a non-JSON body 415', async () => {
    const r = await postSession(svc, { message: 'x' });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    const form = await call(svc.publicUrl, 'POST', '/dashboard/api/session', { raw: 'message=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
  });

  it('live-mode merchants and disabled merchants sign in too (spec §2.2: the dashboard stays reachable)', async () => {
    const live = await createOnboardedMerchant(svc, p.liveKey);
    expect((await signInDashboard(svc, live.wallet)).merchantId).toBe(live.id);
    const off = await createOnboardedMerchant(svc, p.testKey);
    expect((await admin(svc, 'POST', `/merchants/${off.id}/disable`)).status).toBe(200);
    const d = await signInDashboard(svc, off.wallet);
    const me = await d.call('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ merchant_id: off.id, disabled: true });
  });
});

describe('sessions: cookie, CSRF, timeouts, sign-out', () => {
  it('every other dashboard call needs the cookie: none, a made-up one, or a malformed one is 401 unauthorized', async () => {
    for (const cookie of [undefined, `prs_dashboard=${'A'.repeat(43)}`, 'prs_dashboard=short']) {
      const r = await call(svc.publicUrl, 'GET', '/dashboard/api/me', { headers: cookie ? { cookie } : {} });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ ok: false, error: 'unauthorized' });
    }
    expect((await call(svc.publicUrl, 'GET', '/dashboard/api/requests')).status).toBe(401);
    expect((await call(svc.publicUrl, 'DELETE', '/dashboard/api/session')).status).toBe(401);
  });

  it('changes need the session\'s CSRF token in x-csrf-token: missing or wrong → 403 csrf_failed, nothing changes', async () => {
    const c = await signInDashboard(svc, merchant.wallet);
    for (const csrf of [false, 'wrong-token', (await signInDashboard(svc, merchant.wallet)).csrf] as const) {
      const r = await c.call('PATCH', '/me', { body: { display_name: 'Hijacked' }, csrf });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ ok: false, error: 'csrf_failed' });
    }
    expect((await c.call('GET', '/me')).body.display_name).not.toBe('Hijacked');
    // GET /session gives a reloaded page (or a new tab) its CSRF token back; /me has DESIGN's fields only.
    expect((await c.call('GET', '/me', { csrf: false })).body).not.toHaveProperty('csrf_token');
    const session = await c.call('GET', '/session', { csrf: false });
    expect(session.status).toBe(200);
    expect(session.body).toEqual({ ok: true, merchant_id: c.merchantId, csrf_token: c.csrf });
    expect((await call(svc.publicUrl, 'GET', '/dashboard/api/session')).body).toEqual({ ok: false, error: 'unauthorized' });
  });

  it('ends after an hour unused; each call counts as use', async () => {
    const c = await signInDashboard(svc, merchant.wallet);
    const key = digest(tokenOf(c.cookie));
    await sql(`UPDATE dashboard_sessions SET last_seen_at = now() - interval '59 minutes' WHERE id = $1`, [key]);
    expect((await c.call('GET', '/me')).status).toBe(200);
    const [{ idle }] = await sql(`SELECT extract(epoch FROM now() - last_seen_at) AS idle FROM dashboard_sessions WHERE id = $1`, [key]);
    expect(Number(idle)).toBeLessThan(60);
    await sql(`UPDATE dashboard_sessions SET last_seen_at = now() - interval '61 minutes' WHERE id = $1`, [key]);
    expect((await c.call('GET', '/me')).status).toBe(401);
  });

  it('ends at its absolute expiry (7 days), however active', async () => {
    const c = await signInDashboard(svc, merchant.wallet);
    await sql(`UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [digest(tokenOf(c.cookie))]);
    expect((await c.call('GET', '/me')).status).toBe(401);
  });

  it('DELETE /dashboard/api/session needs the CSRF header, answers 200, clears the cookie and ends the session', async () => {
    const c = await signInDashboard(svc, merchant.wallet);
    expect((await c.call('DELETE', '/session', { csrf: false })).status).toBe(403);
    const out = await c.call('DELETE', '/session');
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ ok: true });
    const cleared = out.headers.getSetCookie().find((l) => l.startsWith('prs_dashboard='))!;
    expect(cleared).toMatch(/Path=\/dashboard/);
    expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970/);
    expect((await c.call('GET', '/me')).status).toBe(401);
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM dashboard_sessions WHERE id = $1`, [digest(tokenOf(c.cookie))]);
    expect(n).toBe(0);
  });

  it('the cookie is Secure and every public answer carries Strict-Transport-Security when PUBLIC_URL is https', async () => {
    const https = await startService({ env: { PUBLIC_URL: 'https://shop.example' } });
    try {
      const other = await createPartner(https);
      const m = await createOnboardedMerchant(https, other.testKey);
      const message = dashboardMessage(https, m.wallet.address, await dashboardNonce(https));
      const r = await postSession(https, { message, signature: await m.wallet.signMessage(message) });
      expect(r.status).toBe(200);
      const line = r.headers.getSetCookie().find((l) => l.startsWith('prs_dashboard='))!;
      expect(line.split(';').map((s) => s.trim().toLowerCase())).toContain('secure');
      // And browsers are told to come back over https only: a page or sign-in message reached once over http is
      // what a network attacker serves as ours (the SIWE scheme check narrows that, this closes it).
      const hsts = (url: string, path: string) => fetch(`${url}${path}`).then((res) => res.headers.get('strict-transport-security'));
      for (const path of ['/dashboard', '/dashboard/api/me', '/pay/00000000-0000-4000-8000-000000000000', '/api/v1/requests', '/nowhere']) {
        expect([path, await hsts(https.publicUrl, path)]).toEqual([path, 'max-age=31536000']);
      }
      // Not on the admin listener (its own address, often plain http inside the network), nor for http.
      expect(await hsts(https.adminUrl, '/admin/partners')).toBeNull();
      expect(await hsts(svc.publicUrl, '/dashboard')).toBeNull();
    } finally {
      await https.close();
    }
  });
});

/** A merchant onboarded through the real onboarding flow by a contract wallet, `sign` making its signatures. */
async function onboardedAs(wallet: string, sign: (message: string) => Promise<string>): Promise<string> {
  const shell = await createShellMerchant(svc, p.testKey, { wallet_address: wallet });
  const token = onboardingToken(shell.onboarding_url);
  const { message } = await siweProof(svc, token, randomWallet(), { address: getAddress(wallet) });
  const proved = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: { message, signature: await sign(message) } });
  if (proved.status !== 200) throw new Error(`wallet step failed: ${proved.status} ${proved.text}`);
  const done = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });
  if (done.status !== 200) throw new Error(`onboarding failed: ${done.status} ${done.text}`);
  return shell.merchant_id;
}

describe('the worker\'s sweep', () => {
  it('removes every merchant\'s ended sessions (absolute or idle) and expired nonces; live ones stay', async () => {
    const live = await signInDashboard(svc, merchant.wallet);
    const [ended, idle] = [await signInDashboard(svc, merchant.wallet), await signInDashboard(svc, merchant.wallet)];
    await sql(`UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [digest(tokenOf(ended.cookie))]);
    await sql(`UPDATE dashboard_sessions SET last_seen_at = now() - interval '61 minutes' WHERE id = $1`, [digest(tokenOf(idle.cookie))]);
    const [old, fresh] = [await dashboardNonce(svc), await dashboardNonce(svc)];
    await sql(`UPDATE dashboard_nonces SET expires_at = now() - interval '1 second' WHERE nonce = $1`, [old]);
    const worker = await startService({ worker: true });
    try {
      await waitFor(async () => (await sql(`SELECT 1 FROM dashboard_sessions WHERE id = ANY($1)`, [[digest(tokenOf(ended.cookie)), digest(tokenOf(idle.cookie))]])).length === 0);
      await waitFor(async () => (await sql(`SELECT 1 FROM dashboard_nonces WHERE nonce = $1`, [old])).length === 0);
    } finally {
      await worker.close();
    }
    expect(await sql(`SELECT 1 FROM dashboard_sessions WHERE id = $1`, [digest(tokenOf(live.cookie))])).toHaveLength(1);
    expect(await sql(`SELECT 1 FROM dashboard_nonces WHERE nonce = $1`, [fresh])).toHaveLength(1);
  });
});

describe('contract wallets (ERC-1271, ERC-6492)', () => {
  it('a merchant whose wallet is a contract signs in with its owner\'s signature; another signer is 401', async () => {
    const owner = Wallet.createRandom();
    const contract = await deployContract(testEnv().rpcUrl, 'TestSmartWallet.sol', 'TestSmartWallet', [owner.address]);
    const merchantId = await onboardedAs(contract, (m) => owner.signMessage(m));
    const nonce = await dashboardNonce(svc);
    const message = dashboardMessage(svc, getAddress(contract), nonce);
    const r = await postSession(svc, { message, signature: await owner.signMessage(message) });
    expect(r.status).toBe(200);
    expect(r.body.merchant_id).toBe(merchantId);
    const me = await dashboardClient(svc, r.body.merchant_id, sessionCookie(r), r.body.csrf_token).call('GET', '/me');
    expect(me.body.wallet_address).toBe(contract.toLowerCase());

    const again = dashboardMessage(svc, getAddress(contract), await dashboardNonce(svc));
    const wrong = await postSession(svc, { message: again, signature: await Wallet.createRandom().signMessage(again) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_signature');
  });

  it('a counterfactual smart wallet (ERC-6492, not deployed yet) signs in', async () => {
    const owner = Wallet.createRandom();
    const factoryAbi = new Interface(loadArtifact('TestSmartWallet.sol', 'TestWalletFactory').abi);
    const factory = await deployContract(testEnv().rpcUrl, 'TestSmartWallet.sol', 'TestWalletFactory');
    const salt = zeroPadValue('0x21', 32);
    const res = await fetch(testEnv().rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: factory, data: factoryAbi.encodeFunctionData('addressOf', [owner.address, salt]) }, 'latest'] }),
    });
    const wallet = getAddress(`0x${((await res.json()) as { result: string }).result.slice(26)}`);
    const wrapped = async (message: string) =>
      concat([
        AbiCoder.defaultAbiCoder().encode(['address', 'bytes', 'bytes'], [factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]), await owner.signMessage(message)]),
        '0x' + '6492'.repeat(16),
      ]);
    const merchantId = await onboardedAs(wallet, wrapped);
    const message = dashboardMessage(svc, wallet, await dashboardNonce(svc));
    const r = await postSession(svc, { message, signature: await wrapped(message) });
    expect(r.status).toBe(200);
    expect(r.body.merchant_id).toBe(merchantId);
  });

  it('when the chain cannot check a contract signature: 503 chain_unavailable, no session', async () => {
    const proxy = new TcpProxy(Number(new URL(testEnv().rpcUrl).port));
    await proxy.start();
    const cut = await startService({ env: { CHAIN_TEST_RPC_URL: proxy.url, CHAIN_LIVE_RPC_URL: proxy.url, CHAIN_RPC_TIMEOUT_MS: '1000' } });
    try {
      await proxy.cut();
      const someone = Wallet.createRandom();
      const message = dashboardMessage(cut, someone.address, await dashboardNonce(cut));
      // Not the address's own key: only a contract wallet could have made it, so the chain must answer.
      const r = await postSession(cut, { message, signature: await Wallet.createRandom().signMessage(message) });
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ ok: false, error: 'chain_unavailable' });
      expect(r.headers.getSetCookie()).toEqual([]);
    } finally {
      await cut.close();
      await proxy.cut();
    }
  });
});
