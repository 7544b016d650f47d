import { randomUUID } from 'node:crypto';
import { admin, createKey, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { waitFor } from '../support/wait';
import { RequestsService } from '../../src/modules/requests/application/requests.service';
import { ApiKeyService } from '../../src/modules/auth/api-key.service';
import { MerchantsService } from '../../src/modules/merchants/merchants.service';

/*
 * Spec §5, DESIGN §3 (auth): missing, malformed, unknown or revoked key → 401 unauthorized, the same bytes
 * whatever was wrong; a key without the endpoint's scope → 403 insufficient_scope with required_scope.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const UNAUTHORIZED = '{"ok":false,"error":"unauthorized"}';

/** The seven endpoints of spec §4 (+ the accounts aliases of §4.8), each with the scope it needs. */
function endpoints(ids: { request: string; merchant: string }) {
  return [
    { name: 'POST /api/v1/requests/create', method: 'POST', path: '/api/v1/requests/create', scope: 'requests:write', body: { account_id: ids.merchant, fiat_amount_int: 100 } },
    { name: 'GET /api/v1/requests/:id', method: 'GET', path: `/api/v1/requests/${ids.request}`, scope: 'requests:read' },
    { name: 'GET /api/v1/requests', method: 'GET', path: '/api/v1/requests', scope: 'requests:read' },
    { name: 'POST /api/v1/requests/:id/cancel', method: 'POST', path: `/api/v1/requests/${ids.request}/cancel`, scope: 'requests:write' },
    { name: 'POST /api/v1/merchants', method: 'POST', path: '/api/v1/merchants', scope: 'merchants:write', body: {} },
    { name: 'GET /api/v1/merchants', method: 'GET', path: '/api/v1/merchants', scope: 'merchants:read' },
    { name: 'GET /api/v1/merchants/:id', method: 'GET', path: `/api/v1/merchants/${ids.merchant}`, scope: 'merchants:read' },
    { name: 'POST /api/v1/accounts', method: 'POST', path: '/api/v1/accounts', scope: 'merchants:write', body: {} },
    { name: 'GET /api/v1/accounts', method: 'GET', path: '/api/v1/accounts', scope: 'merchants:read' },
    { name: 'GET /api/v1/accounts/:id', method: 'GET', path: `/api/v1/accounts/${ids.merchant}`, scope: 'merchants:read' },
  ] as const;
}
const SCOPES = ['requests:read', 'requests:write', 'merchants:read', 'merchants:write'];

describe('401: every kind of bad key gets the same bytes', () => {
  let p: TestPartner;
  beforeAll(async () => {
    p = await createPartner(svc);
  });

  const get = (headers: Record<string, string>) => call(svc.publicUrl, 'GET', '/api/v1/requests', { headers });

  it('a valid key works (the baseline for the cases below)', async () => {
    expect((await get({ authorization: `Bearer ${p.testKey}` })).status).toBe(200);
  });

  it.each([
    ['missing Authorization header', () => ({})],
    ['empty Authorization header', () => ({ authorization: '' })],
    ['Bearer with nothing after it', () => ({ authorization: 'Bearer ' })],
    ['Basic scheme', () => ({ authorization: `Basic ${Buffer.from(`x:${p.testKey}`).toString('base64')}` })],
    ['Token scheme', () => ({ authorization: `Token ${p.testKey}` })],
    ['the bare key without a scheme', () => ({ authorization: p.testKey })],
    ['Bearer with two spaces', () => ({ authorization: `Bearer  ${p.testKey}` })],
    ['key followed by garbage', () => ({ authorization: `Bearer ${p.testKey} extra` })],
    ['unknown prs_test_ key', () => ({ authorization: `Bearer prs_test_${'A'.repeat(43)}` })],
    ['unknown prs_live_ key', () => ({ authorization: `Bearer prs_live_${'A'.repeat(43)}` })],
    ['key of another service prefix', () => ({ authorization: `Bearer sk_test_${p.testKey.slice('prs_test_'.length)}` })],
    ['key with the prefix in upper case', () => ({ authorization: `Bearer PRS_TEST_${p.testKey.slice('prs_test_'.length)}` })],
    ['prs_live_ key carrying a test key secret', () => ({ authorization: `Bearer prs_live_${p.testKey.slice('prs_test_'.length)}` })],
    ['prs_test_ key carrying a live key secret', () => ({ authorization: `Bearer prs_test_${p.liveKey.slice('prs_live_'.length)}` })],
    ['the key truncated by one character', () => ({ authorization: `Bearer ${p.testKey.slice(0, -1)}` })],
    ['a very long key', () => ({ authorization: `Bearer prs_test_${'a'.repeat(5000)}` })],
    ['the admin token as an API key', () => ({ authorization: `Bearer ${ADMIN_TOKEN}` })],
  ])('%s → 401', async (_label, headers) => {
    const r = await get(headers());
    expect(r.status).toBe(401);
    expect(r.text).toBe(UNAUTHORIZED);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.headers.get('www-authenticate')).toBeNull();
  });

  it('a revoked key is refused on the very next call, with the same bytes', async () => {
    const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
    expect(key.status).toBe(201);
    // Used once, so the key is in the service's cache when it is revoked.
    expect((await get({ authorization: `Bearer ${key.body.api_key}` })).status).toBe(200);
    const revoked = await admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`);
    expect(revoked.status).toBe(200);
    const r = await get({ authorization: `Bearer ${key.body.api_key}` });
    expect(r.status).toBe(401);
    expect(r.text).toBe(UNAUTHORIZED);
    // Other keys of the partner are untouched.
    expect((await get({ authorization: `Bearer ${p.testKey}` })).status).toBe(200);
  });

  it('a create the guard let in before its key was revoked does not insert after the revocation (it waited for a connection)', async () => {
    const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
    const m = await createOnboardedMerchant(svc, key.body.api_key);
    const made = await mustCreateRequest(svc, key.body.api_key, { account_id: m.id, fiat_amount_int: 700 });
    expect(await sql(`SELECT api_key_id FROM payment_requests WHERE id = $1`, [made.request_id])).toEqual([{ api_key_id: key.body.key_id }]);
    // The call as the guard admitted it, its key revoked before the insert runs (a helper held the pool busy
    // with slow pages: the create landed up to 2.5 s after the revocation had answered).
    const admitted = { partnerId: p.id, mode: 'test' as const, allowedExpiryMinutes: [60], defaultExpiryMinutes: 60, keyId: key.body.key_id };
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`)).status).toBe(200);
    const input = { merchantId: m.id, fiatAmount: 800, metadata: {}, paymentMode: 'pos' as const, source: 'partner' as const, idempotencyKey: 'k'.repeat(40) };
    await expect(svc.app.get(RequestsService).create(admitted, input)).rejects.toMatchObject({ code: 'unauthorized' });
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1 AND fiat_amount = 800`, [m.id])).toEqual([]);
  });

  it('a cancel and a merchant create the guard let in before their key was revoked change nothing after the revocation', async () => {
    const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
    const m = await createOnboardedMerchant(svc, key.body.api_key);
    const made = await mustCreateRequest(svc, key.body.api_key, { account_id: m.id, fiat_amount_int: 900 });
    // The calls as the guard admitted them, the key revoked before they reach the database.
    const admitted = await svc.app.get(ApiKeyService).authenticate(key.body.api_key);
    expect(admitted?.keyId).toBe(key.body.key_id);
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`)).status).toBe(200);
    await expect(svc.app.get(RequestsService).cancel({ partnerId: p.id, testMode: true }, made.request_id, admitted!.keyId))
      .rejects.toMatchObject({ code: 'unauthorized' });
    expect(await sql(`SELECT status FROM payment_requests WHERE id = $1`, [made.request_id])).toEqual([{ status: 'requested' }]);
    const wallet = `0x${randomUUID().replace(/-/g, '').padEnd(40, '7')}`;
    await expect(svc.app.get(MerchantsService).create(admitted!, { wallet_address: wallet }))
      .rejects.toMatchObject({ code: 'unauthorized' });
    expect(await sql(`SELECT id FROM merchants WHERE wallet_address = $1`, [wallet])).toEqual([]);
  });

  it('a revocation waits for a cancel that holds its key, and a cancel after it answers 401', async () => {
    const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
    const m = await createOnboardedMerchant(svc, key.body.api_key);
    const made = await mustCreateRequest(svc, key.body.api_key, { account_id: m.id, fiat_amount_int: 910 });
    const keys = svc.app.get(ApiKeyService);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const started = new Promise<void>((r) => (holding = r));
    const write = keys.whileLive(key.body.key_id, async () => {
      holding();
      await held;
      return 'written';
    });
    await started;
    let revoked = false;
    const revocation = admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`).then((r) => {
      revoked = true;
      return r;
    });
    // The revocation is blocked on the key's row while the write holds it.
    await waitFor(async () => (await sql(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE api_keys%'`)).length > 0, 10000, 20);
    expect(revoked).toBe(false);
    release();
    await expect(write).resolves.toBe('written');
    expect((await revocation).status).toBe(200);
    const r = await call(svc.publicUrl, 'POST', `/api/v1/requests/${made.request_id}/cancel`, { key: key.body.api_key });
    expect(r.status).toBe(401);
    expect(await sql(`SELECT status FROM payment_requests WHERE id = $1`, [made.request_id])).toEqual([{ status: 'requested' }]);
  });

  it('a revoked key is refused on the admin listener too', async () => {
    const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'live' });
    expect((await call(svc.adminUrl, 'GET', '/api/v1/merchants', { key: key.body.api_key })).status).toBe(200);
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`)).status).toBe(200);
    const r = await call(svc.adminUrl, 'GET', '/api/v1/merchants', { key: key.body.api_key });
    expect(r.status).toBe(401);
    expect(r.text).toBe(UNAUTHORIZED);
  });

  it('a revoked key is refused at once by a second instance that had it cached (DESIGN §1 scale-out)', async () => {
    const second = await startService({ env: { REDIS_PREFIX: svc.config.redisPrefix } });
    try {
      for (let round = 0; round < 5; round++) {
        const key = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
        // Cached on both instances.
        expect((await call(svc.publicUrl, 'GET', '/api/v1/merchants', { key: key.body.api_key })).status).toBe(200);
        expect((await call(second.publicUrl, 'GET', '/api/v1/merchants', { key: key.body.api_key })).status).toBe(200);
        expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${key.body.key_id}`)).status).toBe(200);
        const r = await call(second.publicUrl, 'GET', '/api/v1/merchants', { key: key.body.api_key });
        expect({ round, status: r.status, text: r.text }).toEqual({ round, status: 401, text: UNAUTHORIZED });
      }
    } finally {
      await second.close();
    }
  });

  it('every endpoint answers a missing key with the same bytes, on both listeners', async () => {
    for (const e of endpoints({ request: randomUUID(), merchant: randomUUID() })) {
      for (const base of [svc.publicUrl, svc.adminUrl]) {
        const r = await call(base, e.method, e.path, { body: 'body' in e ? e.body : undefined });
        expect({ endpoint: e.name, status: r.status, text: r.text }).toEqual({ endpoint: e.name, status: 401, text: UNAUTHORIZED });
      }
    }
  });
});

describe('403 insufficient_scope with required_scope', () => {
  let p: TestPartner;
  let ids: { request: string; merchant: string };
  const keysWithout = new Map<string, string>();
  const keysWithOnly = new Map<string, string>();

  beforeAll(async () => {
    p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const r = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 500 });
    ids = { request: r.request_id, merchant: m.id };
    for (const s of SCOPES) {
      keysWithout.set(s, await createKey(svc, p.id, { mode: 'test', scopes: SCOPES.filter((x) => x !== s) }));
      keysWithOnly.set(s, await createKey(svc, p.id, { mode: 'test', scopes: [s] }));
    }
  });

  it('each endpoint refuses a key lacking exactly its scope', async () => {
    for (const e of endpoints(ids)) {
      const r = await call(svc.publicUrl, e.method, e.path, { key: keysWithout.get(e.scope), body: 'body' in e ? e.body : undefined });
      expect({ endpoint: e.name, status: r.status, body: r.body }).toEqual({
        endpoint: e.name,
        status: 403,
        body: { ok: false, error: 'insufficient_scope', required_scope: e.scope },
      });
    }
  });

  it('each endpoint refuses a key holding only another scope, naming its own scope', async () => {
    for (const e of endpoints(ids)) {
      for (const other of SCOPES.filter((s) => s !== e.scope)) {
        const r = await call(svc.adminUrl, e.method, e.path, { key: keysWithOnly.get(other), body: 'body' in e ? e.body : undefined });
        expect({ endpoint: e.name, key: other, status: r.status, body: r.body }).toEqual({
          endpoint: e.name, key: other, status: 403, body: { ok: false, error: 'insufficient_scope', required_scope: e.scope },
        });
      }
    }
  });

  it('a key with only the needed scope passes the scope check', async () => {
    // Read endpoints succeed outright; cancel runs last so the request is still there for the reads.
    const order = ['GET /api/v1/requests/:id', 'GET /api/v1/requests', 'GET /api/v1/merchants', 'GET /api/v1/merchants/:id',
      'GET /api/v1/accounts', 'GET /api/v1/accounts/:id', 'POST /api/v1/requests/create', 'POST /api/v1/merchants',
      'POST /api/v1/accounts', 'POST /api/v1/requests/:id/cancel'];
    const all = endpoints(ids);
    for (const name of order) {
      const e = all.find((x) => x.name === name)!;
      const r = await call(svc.publicUrl, e.method, e.path, { key: keysWithOnly.get(e.scope), body: 'body' in e ? e.body : undefined });
      expect({ endpoint: e.name, status: r.status, ok: r.body?.ok }).toEqual({
        endpoint: e.name, status: e.method === 'POST' && e.name !== 'POST /api/v1/requests/:id/cancel' ? 201 : 200, ok: true,
      });
    }
  });

  it('scope is checked before the body: an under-scoped key with a broken body gets 403', async () => {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: keysWithout.get('requests:write'), raw: '{not json' });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ ok: false, error: 'insufficient_scope', required_scope: 'requests:write' });
  });
});

describe('both listeners serve the partner API identically', () => {
  it('create on one, read on the other: the same bodies', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const created = await call(svc.adminUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 777 } });
    expect(created.status).toBe(201);
    for (const path of [`/api/v1/requests/${created.body.request_id}`, '/api/v1/requests', `/api/v1/merchants/${m.id}`,
      '/api/v1/merchants', `/api/v1/accounts/${m.id}`, '/api/v1/accounts', `/api/v1/requests/${randomUUID()}`, '/api/v1/requests?limit=101']) {
      const pub = await call(svc.publicUrl, 'GET', path, { key: p.testKey });
      const adm = await call(svc.adminUrl, 'GET', path, { key: p.testKey });
      expect({ path, status: adm.status, text: adm.text }).toEqual({ path, status: pub.status, text: pub.text });
    }
    const got = await call(svc.publicUrl, 'GET', `/api/v1/requests/${created.body.request_id}`, { key: p.testKey });
    expect(got.body).toEqual(created.body);
  });

  it('an unknown key gets the same 401 bytes on both', async () => {
    const a = await call(svc.publicUrl, 'GET', '/api/v1/merchants', { key: 'prs_test_nope' });
    const b = await call(svc.adminUrl, 'GET', '/api/v1/merchants', { key: 'prs_test_nope' });
    expect([a.status, b.status]).toEqual([401, 401]);
    expect(b.text).toBe(a.text);
  });
});

describe('the admin API', () => {
  it.each([
    ['GET', '/admin/api/partners/00000000-0000-0000-0000-000000000000'],
    ['POST', '/admin/api/partners'],
    ['GET', '/admin/api'],
    ['GET', '/admin/queues'],
    ['GET', '/ADMIN/API/partners'],
  ])('%s %s on the public listener is a plain 404, even with the admin token', async (method, path) => {
    const r = await call(svc.publicUrl, method, path, { key: ADMIN_TOKEN, body: method === 'POST' ? { slug: 'x', name: 'x', default_currency: 'usd' } : undefined });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ ok: false, error: 'not_found' });
  });

  it('a partner created through the public listener is impossible', async () => {
    const slug = `p-${randomUUID().slice(0, 8)}`;
    await call(svc.publicUrl, 'POST', '/admin/api/partners', { key: ADMIN_TOKEN, body: { slug, name: 'x', default_currency: 'usd' } });
    // The slug is still free on the admin listener.
    const r = await admin(svc, 'POST', '/partners', { slug, name: 'x', default_currency: 'usd' });
    expect(r.status).toBe(201);
  });

  it.each([
    ['missing token', {}],
    ['wrong token', { authorization: 'Bearer wrong-token-wrong-token' }],
    ['token with one character more', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
    ['token as Basic auth', { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
    ['a partner API key', { authorization: 'Bearer prs_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
  ])('%s → 401 on the admin listener', async (_label, headers) => {
    for (const [method, path] of [['GET', `/admin/api/partners/${randomUUID()}`], ['POST', '/admin/api/partners']]) {
      const r = await call(svc.adminUrl, method, path, { headers, body: method === 'POST' ? { slug: 'never-made', name: 'x', default_currency: 'usd' } : undefined });
      expect({ method, path, status: r.status, text: r.text }).toEqual({ method, path, status: 401, text: UNAUTHORIZED });
    }
  });

  it('the onboarding API is not served on the admin listener', async () => {
    const r = await call(svc.adminUrl, 'GET', `/onboarding/api/${'a'.repeat(43)}`);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ ok: false, error: 'not_found' });
  });
});
