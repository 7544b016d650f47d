import { randomUUID } from 'node:crypto';
import { createKey, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { freshMinute } from '../support/clock';
import { call, type Reply } from '../support/http';
import { TcpProxy } from '../support/tcp-proxy';
import { testEnv } from '../support/test-env';

/*
 * Spec §8 and DESIGN §3: per key, per endpoint, per clock minute; 429 {ok:false, error:"rate_limited"} with no
 * rate-limit headers; case, trailing-slash and accounts variants of a path share the canonical bucket.
 * RATE_LIMIT_SCALE=0.1 makes the limits 6 per minute (3 for merchant create) to keep the test fast.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startService({ env: { RATE_LIMIT_SCALE: '0.1' } });
});
afterAll(async () => {
  await svc?.close();
});

const LIMIT = 6;
const CREATE_MERCHANT_LIMIT = 3;
const RATE_LIMITED = '{"ok":false,"error":"rate_limited"}';
// Every test makes its calls inside one clock minute: each starts one nothing has counted in (freshMinute).

function expectNoRateHeaders(r: Reply) {
  const names = [...r.headers.keys()];
  expect(names.filter((n) => /ratelimit|retry-after/i.test(n))).toEqual([]);
}
function expectLimited(r: Reply) {
  expect(r.status).toBe(429);
  expect(r.text).toBe(RATE_LIMITED);
  expectNoRateHeaders(r);
}
const get = (key: string, path: string) => call(svc.publicUrl, 'GET', path, { key });

/** A partner whose keys have not been used yet (setup calls go through another key). */
async function fresh(): Promise<{ p: TestPartner; key: string; key2: string }> {
  const p = await createPartner(svc);
  return { p, key: await createKey(svc, p.id, { mode: 'test' }), key2: await createKey(svc, p.id, { mode: 'test' }) };
}

it('the call after the limit → 429 rate_limited, no rate-limit headers; another key and another endpoint are unaffected', async () => {
  const { key, key2 } = await fresh();
  freshMinute();
  for (let i = 0; i < LIMIT; i++) {
    const r = await get(key, '/api/v1/requests');
    expect({ call: i + 1, status: r.status }).toEqual({ call: i + 1, status: 200 });
    expectNoRateHeaders(r);
  }
  expectLimited(await get(key, '/api/v1/requests'));
  expectLimited(await get(key, '/api/v1/requests?limit=1'));
  // Same partner, another key: its own counter.
  expect((await get(key2, '/api/v1/requests')).status).toBe(200);
  // Same key, other endpoints: their own counters.
  expect((await get(key, '/api/v1/merchants')).status).toBe(200);
  expect((await get(key, `/api/v1/requests/${randomUUID()}`)).status).toBe(404);
  expect((await call(svc.publicUrl, 'POST', `/api/v1/requests/${randomUUID()}/cancel`, { key })).status).toBe(404);
  // And the exhausted one stays exhausted, on the admin listener too.
  expectLimited(await call(svc.adminUrl, 'GET', '/api/v1/requests', { key }));
});

it('the limit holds for parallel calls: exactly LIMIT succeed', async () => {
  const { key } = await fresh();
  freshMinute();
  const replies = await Promise.all(Array.from({ length: LIMIT + 4 }, () => get(key, '/api/v1/merchants')));
  expect(replies.filter((r) => r.status === 200)).toHaveLength(LIMIT);
  for (const r of replies.filter((x) => x.status !== 200)) expectLimited(r);
});

it('calls that fail validation count too (the limit comes before the body, DESIGN §3)', async () => {
  const { key } = await fresh();
  freshMinute();
  for (let i = 0; i < LIMIT; i++) {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, body: { nope: true } });
    expect(r.status).toBe(400);
  }
  expectLimited(await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, raw: '{not json' }));
});

it('case and trailing-slash variants of the list path share its bucket', async () => {
  const { key } = await fresh();
  freshMinute();
  const variants = ['/API/V1/REQUESTS', '/api/v1/requests/', '/Api/V1/Requests/', '/api/v1/REQUESTS', '/API/v1/requests/', '/api/v1/requests'];
  for (const path of variants) {
    const r = await get(key, path);
    expect({ path, status: r.status }).toEqual({ path, status: 200 });
  }
  for (const path of ['/api/v1/requests', '/API/V1/REQUESTS/']) expectLimited(await get(key, path));
});

it('case and trailing-slash variants of create share its bucket', async () => {
  const { p, key } = await fresh();
  const merchant = await createOnboardedMerchant(svc, p.testKey);
  freshMinute();
  const variants = ['/API/V1/REQUESTS/CREATE/', '/api/v1/requests/create/', '/Api/V1/Requests/Create', '/API/V1/REQUESTS/CREATE', '/api/v1/requests/CREATE', '/api/v1/requests/create'];
  for (const path of variants) {
    const r = await call(svc.publicUrl, 'POST', path, { key, body: { account_id: merchant.id, fiat_amount_int: 100 } });
    expect({ path, status: r.status }).toEqual({ path, status: 201 });
  }
  expectLimited(await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, body: { account_id: merchant.id, fiat_amount_int: 100 } }));
  // The calls over the limit created nothing.
  const listed = await get(p.testKey, `/api/v1/requests?account_id=${merchant.id}`);
  expect(listed.body.requests).toHaveLength(LIMIT);
});

it('get-by-id and cancel variants share their buckets', async () => {
  const { p, key } = await fresh();
  const merchant = await createOnboardedMerchant(svc, p.testKey);
  const r0 = await mustCreateRequest(svc, p.testKey, { account_id: merchant.id, fiat_amount_int: 100 });
  freshMinute();
  const id = r0.request_id;
  for (const path of [`/api/v1/requests/${id}`, `/API/V1/REQUESTS/${id}`, `/api/v1/requests/${id}/`, `/api/v1/requests/${randomUUID()}`, `/Api/v1/Requests/${id}`, `/api/v1/requests/${id}`]) {
    const r = await get(key, path);
    expect(r.status === 200 || r.status === 404).toBe(true);
  }
  expectLimited(await get(key, `/api/v1/requests/${id}`));
  for (const path of [`/api/v1/requests/${randomUUID()}/cancel`, `/API/V1/REQUESTS/${randomUUID()}/CANCEL/`, `/api/v1/requests/${randomUUID()}/cancel/`,
    `/api/v1/requests/${randomUUID()}/Cancel`, `/API/v1/requests/${randomUUID()}/cancel`, `/api/v1/requests/${id}/cancel`]) {
    const r = await call(svc.publicUrl, 'POST', path, { key });
    expect(r.status === 200 || r.status === 404).toBe(true);
  }
  expectLimited(await call(svc.publicUrl, 'POST', `/api/v1/requests/${id}/cancel`, { key }));
});

it('merchant create: 3 per minute, shared by /merchants, /accounts and their variants', async () => {
  const { key, key2 } = await fresh();
  freshMinute();
  for (const path of ['/api/v1/merchants', '/api/v1/accounts', '/API/V1/ACCOUNTS/']) {
    const r = await call(svc.publicUrl, 'POST', path, { key, body: {} });
    expect({ path, status: r.status }).toEqual({ path, status: 201 });
  }
  expect(CREATE_MERCHANT_LIMIT).toBe(3);
  for (const path of ['/api/v1/merchants/', '/api/v1/accounts', '/Api/V1/Merchants']) {
    expectLimited(await call(svc.publicUrl, 'POST', path, { key, body: {} }));
  }
  // Listing merchants is another endpoint; another key is another counter.
  expect((await get(key, '/api/v1/merchants')).status).toBe(200);
  expect((await call(svc.publicUrl, 'POST', '/api/v1/accounts', { key: key2, body: {} })).status).toBe(201);
});

it('merchant list and get: /accounts and /merchants share each bucket', async () => {
  const { p, key } = await fresh();
  const created = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey, body: {} });
  const id = created.body.merchant_id;
  freshMinute();
  for (const path of ['/api/v1/merchants', '/api/v1/accounts', '/API/V1/ACCOUNTS/', '/api/v1/merchants/', '/api/v1/accounts?limit=1', '/Api/V1/Merchants']) {
    const r = await get(key, path);
    expect({ path, status: r.status }).toEqual({ path, status: 200 });
  }
  expectLimited(await get(key, '/api/v1/accounts'));
  expectLimited(await get(key, '/api/v1/merchants'));
  for (const path of [`/api/v1/merchants/${id}`, `/api/v1/accounts/${id}`, `/API/V1/ACCOUNTS/${id}/`, `/api/v1/accounts/${randomUUID()}`, `/api/v1/merchants/${id}/`, `/api/v1/accounts/${id}`]) {
    const r = await get(key, path);
    expect(r.status === 200 || r.status === 404).toBe(true);
  }
  expectLimited(await get(key, `/api/v1/merchants/${id}`));
  expectLimited(await get(key, `/api/v1/accounts/${id}`));
});

describe('a service started while Redis is unreachable', () => {
  let noRedis: TestService;
  beforeAll(async () => {
    noRedis = await startService({ env: { REDIS_URL: 'redis://127.0.0.1:6390' } });
  });
  afterAll(async () => {
    await noRedis?.close();
  });

  it('starts, serves the partner API with the limiter open, and reports not ready', async () => {
    const p = await createPartner(noRedis);
    const m = await createOnboardedMerchant(noRedis, p.testKey);
    const r = await call(noRedis.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 700 } });
    expect(r.status).toBe(201);
    expect((await call(noRedis.publicUrl, 'GET', `/api/v1/requests/${r.body.request_id}`, { key: p.testKey })).status).toBe(200);
    expect((await call(noRedis.publicUrl, 'GET', '/health/ready')).status).toBe(503);
    expect((await call(noRedis.publicUrl, 'GET', '/health/live')).status).toBe(200);
  });
});

describe('Redis goes away while the service runs (DESIGN §3: the limiter lets calls through)', () => {
  let proxy: TcpProxy;
  let cut: TestService;
  beforeAll(async () => {
    const redisPort = Number(new URL(testEnv().redisUrl).port || 6379);
    proxy = new TcpProxy(redisPort);
    await proxy.start();
    cut = await startService({ env: { RATE_LIMIT_SCALE: '0.1', REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
  });
  let isCut = false;
  afterAll(async () => {
    // Reconnect first so every Redis client can close cleanly.
    if (isCut) await proxy.restore();
    await cut?.close();
    await proxy.stop();
  });

  it('with Redis cut off, calls beyond the limit still succeed; once Redis is back the limit applies again', async () => {
    const p = await createPartner(cut);
    const key = await createKey(cut, p.id, { mode: 'test' });
    freshMinute();
    expect((await call(cut.publicUrl, 'GET', '/api/v1/requests', { key })).status).toBe(200);
    await proxy.cut();
    isCut = true;
    for (let i = 0; i < LIMIT * 2; i++) {
      const r = await call(cut.publicUrl, 'GET', '/api/v1/requests', { key });
      expect({ call: i + 1, status: r.status }).toEqual({ call: i + 1, status: 200 });
    }
    // A fresh key is still authenticated from Postgres.
    const key2 = await createKey(cut, p.id, { mode: 'test' });
    expect((await call(cut.publicUrl, 'GET', '/api/v1/merchants', { key: key2 })).status).toBe(200);
    await proxy.restore();
    isCut = false;
    // Counting resumes once the main connection has reconnected.
    let limited = false;
    for (let i = 0; i < 200 && !limited; i++) {
      const r = await call(cut.publicUrl, 'GET', '/api/v1/merchants', { key: key2 });
      limited = r.status === 429;
      if (!limited) await new Promise((res) => setTimeout(res, 20));
    }
    expect(limited).toBe(true);
  }, 30000);
});
