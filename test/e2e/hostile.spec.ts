import { createKey, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call, type Reply } from '../support/http';

/*
 * Hostile and malformed input (DESIGN §3): not JSON → 400 invalid_json; over 64 KiB → 413 payload_too_large;
 * unknown route → 404 not_found; prototype keys refused; never a 500, never a stack trace.
 */
let svc: TestService;
let p: TestPartner;
let merchantId: string;
let key: string;
let n = 0;
beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  merchantId = (await createOnboardedMerchant(svc, p.testKey)).id;
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
  delete (Object.prototype as Record<string, unknown>).polluted;
});

/** Rotates keys so the many calls here stay under the per-key rate limits. */
async function k(): Promise<string> {
  if (n++ % 25 === 0) key = await createKey(svc, p.id, { mode: 'test' });
  return key;
}
const CREATE = '/api/v1/requests/create';
async function raw(path: string, body: string, headers: Record<string, string> = {}): Promise<Reply> {
  return call(svc.publicUrl, 'POST', path, { key: await k(), raw: body, headers });
}
function expectJsonError(r: Reply, status: number, error: string) {
  expect({ status: r.status, ok: r.body?.ok, error: r.body?.error }).toEqual({ status, ok: false, error });
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  expect(r.text).not.toMatch(/\bat \S+ \(|node_modules|Error:/);
}
const polluted = () => ({} as Record<string, unknown>).polluted;

describe('bodies that are not JSON', () => {
  it.each([
    ['a truncated object', '{"account_id": "'],
    ['single quotes', "{'account_id': 'x'}"],
    ['a trailing comma', '{"fiat_amount_int": 100,}'],
    ['plain text', 'hello'],
    ['NaN', '{"fiat_amount_int": NaN}'],
    ['a comment', '{"fiat_amount_int": 100 /* c */}'],
    ['two objects', '{}{}'],
  ])('%s → 400 invalid_json', async (_label, body) => {
    for (const path of [CREATE, '/api/v1/merchants']) expectJsonError(await raw(path, body), 400, 'invalid_json');
  });

  it('invalid_json is exactly {ok:false, error}', async () => {
    const r = await raw(CREATE, '{');
    expect(r.body).toEqual({ ok: false, error: 'invalid_json' });
  });

  it('bytes that are not UTF-8 → 400', async () => {
    const res = await fetch(`${svc.publicUrl}${CREATE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await k()}`, 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.ok).toBe(false);
    expect(['invalid_json', 'invalid_request']).toContain(body.error);
  });

  it('text in Latin-1, not UTF-8, in a memo or metadata → 400 invalid_json, nothing created (it was stored as U+FFFD and answered 201)', async () => {
    const count = async () => (await sql('SELECT count(*)::int AS n FROM payment_requests WHERE merchant_id = $1', [merchantId]))[0].n as number;
    const before = await count();
    const latin1 = (json: string) => Buffer.from(json, 'latin1');
    for (const body of [
      latin1(JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, memo: 'Café' })),
      latin1(JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, metadata: { order: 'Größe 42' } })),
    ]) {
      const res = await fetch(`${svc.publicUrl}${CREATE}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await k()}`, 'content-type': 'application/json' },
        body,
      });
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 400, body: { ok: false, error: 'invalid_json' } });
    }
    expect(await count()).toBe(before);
  });

  it('the same text in UTF-8 is taken and round-trips', async () => {
    const r = await raw(CREATE, JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, memo: 'Café', metadata: { order: 'Größe 42' } }));
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual({ order: 'Größe 42' });
  });

  it('UTF-8 bytes declared in another charset → 415 unsupported_media_type (more in "content types")', async () => {
    const r = await raw(CREATE, JSON.stringify({ account_id: merchantId, fiat_amount_int: 100 }), { 'content-type': 'application/json; charset=utf-16' });
    expectJsonError(r, 415, 'unsupported_media_type');
  });
});

describe('size', () => {
  it('a body over 64 KiB → 413 payload_too_large', async () => {
    const body = JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, memo: 'x'.repeat(70 * 1024) });
    for (const path of [CREATE, '/api/v1/merchants']) {
      const r = await raw(path, body);
      expectJsonError(r, 413, 'payload_too_large');
      expect(r.body).toEqual({ ok: false, error: 'payload_too_large' });
    }
  });

  it('a 1 MiB body → 413', async () => {
    expectJsonError(await raw(CREATE, JSON.stringify({ memo: 'y'.repeat(1024 * 1024) })), 413, 'payload_too_large');
  });

  it('just under 64 KiB is read and validated (400 for the long memo, not 413)', async () => {
    const r = await raw(CREATE, JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, memo: 'x'.repeat(60 * 1024) }));
    expectJsonError(r, 400, 'invalid_request');
    expect(r.body.errors[0].field).toBe('memo');
  });

  it('very long strings in every field are refused cleanly', async () => {
    const long = 'z'.repeat(20000);
    for (const body of [
      { account_id: long, fiat_amount_int: 100 },
      { account_id: merchantId, fiat_amount_int: 100, metadata: { [long]: 'v' } },
      { account_id: merchantId, fiat_amount_int: 100, metadata: { k: long } },
      { account_id: merchantId, fiat_amount_int: 100, customer_name: long },
      { account_id: merchantId, fiat_amount_int: 100, fiat_currency_code: long },
    ]) {
      expectJsonError(await raw(CREATE, JSON.stringify(body)), 400, 'invalid_request');
    }
    expectJsonError(await raw(CREATE, JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, idempotency_key: long })), 400, 'invalid_idempotency_key');
    expectJsonError(await raw('/api/v1/merchants', JSON.stringify({ display_name: long })), 400, 'invalid_request');
  });

  it('a very long path or query → 404 / 400, not 500', async () => {
    const r = await call(svc.publicUrl, 'GET', `/api/v1/requests/${'a'.repeat(8000)}`, { key: await k() });
    expectJsonError(r, 404, 'not_found');
    const q = await call(svc.publicUrl, 'GET', `/api/v1/requests?status=${'a'.repeat(8000)}`, { key: await k() });
    expectJsonError(q, 400, 'invalid_request');
  });

  it('deeply nested JSON → 400, not 500', async () => {
    const depth = 5000;
    const nested = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const r = await raw(CREATE, `{"account_id":"${merchantId}","fiat_amount_int":100,"metadata":${nested}}`);
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    const arr = await raw(CREATE, `${'['.repeat(depth)}${']'.repeat(depth)}`);
    expect(arr.status).toBe(400);
  });
});

describe('unknown routes and methods', () => {
  it.each([
    ['GET', '/'],
    ['GET', '/api/v1/nope'],
    ['GET', '/api/v2/requests'],
    ['POST', '/api/v1/requests'],
    ['DELETE', `/api/v1/requests/00000000-0000-0000-0000-000000000000`],
    ['PUT', '/api/v1/merchants'],
    ['PATCH', '/api/v1/merchants/00000000-0000-0000-0000-000000000000'],
    ['POST', '/api/v1/requests/create/extra'],
    ['GET', '/api/v1/requests/create'.replace('create', 'x/y/z')],
    ['GET', '/.env'],
    ['GET', '/api/v1/../../etc/passwd'],
  ])('%s %s → 404 not_found JSON', async (method, path) => {
    for (const withKey of [true, false]) {
      const r = await call(svc.publicUrl, method, path, { key: withKey ? await k() : undefined, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
      expectJsonError(r, 404, 'not_found');
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }
  });

  it('no framework fingerprints in headers', async () => {
    const r = await call(svc.publicUrl, 'GET', '/api/v1/nope');
    expect(r.headers.get('x-powered-by')).toBeNull();
  });
});

describe('prototype pollution', () => {
  const valid = () => `"account_id":"${merchantId}","fiat_amount_int":100`;

  it.each([
    ['__proto__ at the top level', () => `{"__proto__":{"polluted":"yes"},${valid()}}`],
    ['constructor at the top level', () => `{"constructor":{"prototype":{"polluted":"yes"}},${valid()}}`],
    ['prototype at the top level', () => `{"prototype":{"polluted":"yes"},${valid()}}`],
    ['__proto__ inside metadata', () => `{${valid()},"metadata":{"__proto__":{"polluted":"yes"}}}`],
    ['__proto__ string inside metadata', () => `{${valid()},"metadata":{"__proto__":"yes"}}`],
    ['constructor inside metadata', () => `{${valid()},"metadata":{"constructor":{"prototype":{"polluted":"yes"}}}}`],
    ['constructor string inside metadata', () => `{${valid()},"metadata":{"constructor":"yes"}}`],
    ['__proto__ nested deeper', () => `{${valid()},"metadata":{"a":{"b":{"__proto__":{"polluted":"yes"}}}}}`],
  ])('%s → 400 invalid_request, nothing polluted', async (_label, body) => {
    const r = await raw(CREATE, body());
    expectJsonError(r, 400, 'invalid_request');
    expect(polluted()).toBeUndefined();
  });

  it.each([
    ['__proto__', '{"__proto__":{"polluted":"yes"},"display_name":"x"}'],
    ['constructor', '{"constructor":{"prototype":{"polluted":"yes"}},"display_name":"x"}'],
  ])('%s on merchant create → 400 invalid_request, nothing polluted', async (_label, body) => {
    expectJsonError(await raw('/api/v1/merchants', body), 400, 'invalid_request');
    expect(polluted()).toBeUndefined();
  });

  it('__proto__ on the onboarding and admin endpoints is refused too', async () => {
    const ob = await call(svc.publicUrl, 'POST', `/onboarding/api/${'A'.repeat(43)}/complete`, { raw: '{"__proto__":{"polluted":"yes"},"accept_terms":true}' });
    expect(ob.status).toBeGreaterThanOrEqual(400);
    expect(ob.status).toBeLessThan(500);
    expect(polluted()).toBeUndefined();
  });

  it('the request after a pollution attempt works normally', async () => {
    const r = await raw(CREATE, `{${valid()}}`);
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual({});
    expect(Object.keys(r.body.metadata)).toEqual([]);
  });
});

describe('text Postgres cannot store as sent (never a 500, never silently altered)', () => {
  const base = () => ({ account_id: merchantId, fiat_amount_int: 100 });
  it.each([
    ['NUL in memo', () => ({ ...base(), memo: 'a\u0000b' }), 'memo'],
    ['NUL in a metadata value', () => ({ ...base(), metadata: { k: 'a\u0000b' } }), 'metadata.k'],
    ['NUL in a metadata key', () => ({ ...base(), metadata: { 'a\u0000': 'b' } }), 'metadata.a\u0000'],
    ['NUL in customer_name', () => ({ ...base(), customer_name: 'a\u0000b' }), 'customer_name'],
    ['a lone surrogate in memo', () => ({ ...base(), memo: 'x\ud800y' }), 'memo'],
    ['a lone surrogate in a metadata value', () => ({ ...base(), metadata: { k: '\udc00' } }), 'metadata.k'],
  ])('%s → 400 invalid_request naming the field', async (_label, body, field) => {
    const r = await raw(CREATE, JSON.stringify(body()));
    expectJsonError(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  });

  it.each([
    ['NUL in display_name', { display_name: 'a\u0000b' }, 'display_name'],
    ['NUL in industry', { industry: '\u0000' }, 'industry'],
    ['a lone surrogate in business_name', { business_name: 'x\ud800' }, 'business_name'],
  ])('merchant create with %s → 400 invalid_request', async (_label, body, field) => {
    const r = await raw('/api/v1/merchants', JSON.stringify(body));
    expectJsonError(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  });

  it('a NUL in a list query value → 400, not 500', async () => {
    expectJsonError(await call(svc.publicUrl, 'GET', '/api/v1/requests?status=%00', { key: await k() }), 400, 'invalid_request');
    expectJsonError(await call(svc.publicUrl, 'GET', '/api/v1/merchants?onboarding_status=%00', { key: await k() }), 400, 'invalid_request');
    expectJsonError(await call(svc.publicUrl, 'GET', '/api/v1/requests/%00', { key: await k() }), 404, 'not_found');
  });

  /**
   * Percent-encoding that does not decode used to fail in Express's router (400, before any guard): the `%`
   * signs are now taken literally, so such an id is answered like any other malformed one, after auth.
   */
  it.each(['%zz', '%E0%A4%A', 'abc%', '%C0%AF'])('a path segment %s that does not decode → 401 without a key, 404 with one', async (segment) => {
    expectJsonError(await call(svc.publicUrl, 'GET', `/api/v1/requests/${segment}`), 401, 'unauthorized');
    expectJsonError(await call(svc.publicUrl, 'GET', `/api/v1/requests/${segment}`, { key: await k() }), 404, 'not_found');
    expectJsonError(await call(svc.publicUrl, 'POST', `/api/v1/requests/${segment}/cancel`, { key: await k() }), 404, 'not_found');
    const page = await fetch(`${svc.publicUrl}/pay/${segment}`);
    expect(page.status).toBe(404);
    expect(await page.text()).not.toMatch(/\bat \S+ \(|node_modules|Error:/);
  });

  it('well-formed astral characters (surrogate pairs) are fine and round-trip', async () => {
    const r = await raw(CREATE, JSON.stringify({ ...base(), memo: '😀 𝄞', metadata: { '𝄞': '😀' } }));
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual({ '𝄞': '😀' });
  });
});

describe('wrong shapes', () => {
  it.each([
    ['an empty array', '[]'],
    ['an array of a valid body', () => `[{"account_id":"${merchantId}","fiat_amount_int":100}]`],
    ['a string', '"hello"'],
    ['a number', '42'],
    ['true', 'true'],
    ['null', 'null'],
    ['an empty object', '{}'],
  ])('%s as the body → 400 invalid_request', async (_label, body) => {
    const text = typeof body === 'function' ? body() : body;
    for (const path of [CREATE]) expectJsonError(await raw(path, text), 400, 'invalid_request');
  });

  it.each([['an array', '[]'], ['a string', '"x"'], ['a number', '7']])('%s as a merchant create body → 400 invalid_request', async (_l, body) => {
    expectJsonError(await raw('/api/v1/merchants', body), 400, 'invalid_request');
  });

  it('nested objects in metadata → 400 invalid_request', async () => {
    const r = await raw(CREATE, JSON.stringify({ account_id: merchantId, fiat_amount_int: 100, metadata: { a: { b: 'c' } } }));
    expectJsonError(r, 400, 'invalid_request');
    expect(r.body.errors[0].field).toMatch(/^metadata/);
  });

  it('an empty body with a JSON content type on create → 400 invalid_request (missing fields)', async () => {
    const r = await call(svc.publicUrl, 'POST', CREATE, { key: await k(), headers: { 'content-type': 'application/json' } });
    expectJsonError(r, 400, 'invalid_request');
  });
});

describe('content types (DESIGN §7/§8: 415 unless application/json)', () => {
  /** The test partner's requests and merchants: a refused call must create nothing. */
  const requestCount = async () =>
    (await sql(`SELECT (SELECT count(*) FROM payment_requests WHERE partner_id = $1) || '/' || (SELECT count(*) FROM merchants WHERE partner_id = $1) AS n`, [p.id]))[0].n as string;
  const body = () => JSON.stringify({ account_id: merchantId, fiat_amount_int: 101 });

  it.each([
    ['text/plain (what a cross-site form sends)', 'text/plain'],
    ['text/plain with a charset', 'text/plain; charset=utf-8'],
    ['form-encoded', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
    ['a +json type', 'application/merchant+json'],
    ['application/jsonx', 'application/jsonx'],
  ])('a JSON body sent as %s → 415 unsupported_media_type, nothing created', async (_label, type) => {
    const before = await requestCount();
    for (const path of [CREATE, '/api/v1/merchants']) {
      const r = await raw(path, body(), { 'content-type': type });
      expectJsonError(r, 415, 'unsupported_media_type');
      expect(r.body).toEqual({ ok: false, error: 'unsupported_media_type' });
    }
    expect(await requestCount()).toBe(before);
  });

  it('a body without a content type → 415, nothing created', async () => {
    const before = await requestCount();
    const res = await fetch(`${svc.publicUrl}${CREATE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await k()}` },
      body: new Blob([body()]),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 415, body: { ok: false, error: 'unsupported_media_type' } });
    expect(await requestCount()).toBe(before);
  });

  it.each([
    ['UTF-16 (ASCII only: its bytes are valid UTF-8)', 'application/json; charset=utf-16le', 'utf16le', 'ascii only'],
    ['UTF-16 with an accent', 'application/json; charset=UTF-16LE', 'utf16le', 'café'],
    ['Latin-1 with an accent', 'application/json; charset=iso-8859-1', 'latin1', 'café'],
    ['Latin-1, quoted', 'application/json; charset="latin1"', 'latin1', 'ascii only'],
    ['utf8, not a registered name of UTF-8', 'application/json; charset=utf8', 'utf8', 'café'],
    ['UTF-16 behind a quoted parameter that reads "; charset=utf-8"', 'application/json; x="; charset=utf-8"; charset=utf-16le', 'utf16le', 'ascii only'],
    ['a charset that only starts with utf-8', 'application/json; charset=utf-8 x', 'utf8', 'ascii only'],
    ['an unterminated quoted utf-8', 'application/json; charset="utf-8', 'utf8', 'ascii only'],
  ] as const)('a JSON body declared in another charset (%s) → 415 unsupported_media_type, nothing created', async (_label, type, encoding, memo) => {
    const before = await requestCount();
    const res = await fetch(`${svc.publicUrl}${CREATE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await k()}`, 'content-type': type },
      body: Buffer.from(JSON.stringify({ account_id: merchantId, fiat_amount_int: 101, metadata: { memo } }), encoding),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 415, body: { ok: false, error: 'unsupported_media_type' } });
    expect(await requestCount()).toBe(before);
  });

  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON;charset=UTF-8',
    'application/json; charset="utf-8"',
    'application/json; charset = utf-8 ',
    'application/json; foo=bar',
  ])('%s is read', async (type) => {
    const r = await raw(CREATE, body(), { 'content-type': type });
    expect(r.status).toBe(201);
    expect(r.body.fiat_amount).toBe(101);
  });

  it('bodiless calls are unaffected, whatever their content type says', async () => {
    for (const headers of [{}, { 'content-type': 'text/plain' }] as Record<string, string>[]) {
      const made = await call(svc.publicUrl, 'POST', CREATE, { key: await k(), body: { account_id: merchantId, fiat_amount_int: 103 } });
      expect(made.status).toBe(201);
      const r = await call(svc.publicUrl, 'POST', `/api/v1/requests/${made.body.request_id}/cancel`, { key: await k(), headers });
      expect(r.status).toBe(200);
    }
  });

  it('auth comes first: a bad key with a text/plain body is still 401', async () => {
    const r = await call(svc.publicUrl, 'POST', CREATE, { key: 'prs_test_nope', raw: body(), headers: { 'content-type': 'text/plain' } });
    expectJsonError(r, 401, 'unauthorized');
  });

  it('the admin API and the public pay API refuse text/plain bodies too', async () => {
    const a = await call(svc.adminUrl, 'POST', '/admin/api/partners', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      raw: JSON.stringify({ slug: `ct-${Date.now()}`, name: 'Form post', default_currency: 'usd' }),
    });
    expectJsonError(a, 415, 'unsupported_media_type');
    expect(await sql(`SELECT 1 FROM partners WHERE name = 'Form post'`)).toHaveLength(0);
    const made = await call(svc.publicUrl, 'POST', CREATE, { key: await k(), body: { account_id: merchantId, fiat_amount_int: 104 } });
    const proof = await call(svc.publicUrl, 'POST', `/pay/api/${made.body.request_id}/proof`, {
      raw: JSON.stringify({ tx_hash: `0x${'ab'.repeat(32)}` }),
      headers: { 'content-type': 'text/plain' },
    });
    expectJsonError(proof, 415, 'unsupported_media_type');
    expect((await sql(`SELECT proof_status FROM payment_requests WHERE id = $1`, [made.body.request_id]))[0].proof_status).toBe('none');
  });
});

