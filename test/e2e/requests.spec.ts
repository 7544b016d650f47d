import { randomUUID } from 'node:crypto';
import { createShellMerchant, randomAddress } from '../factories/merchants';
import { admin, createKey, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { createRequest, idemKey, mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call, type Reply } from '../support/http';
import { payOpenRouteExists } from '../support/routes';
import { ISO_MS_RE, keysOf, REQUEST_FIELDS, UUID_RE, withoutReplay } from '../support/shapes';
import { testEnv } from '../support/test-env';

/*
 * Spec §2.1, §4.1–4.4, §7 and DESIGN §3 on payment requests. The test config's RATES are
 * usd:1, eur:0.92, jpy:150.25, inr:83.2, kwd:0.307 and the test token has 6 decimals.
 * Calls are spread over fresh keys (freshKey) so the limit of 60 calls per minute per key never interferes.
 */
let svc: TestService;
let p: TestPartner;
let other: TestPartner;
const m: Record<'usd' | 'eur' | 'jpy' | 'kwd' | 'inr', string> = {} as never;
let liveMerchant: string;
let foreignMerchant: string;

beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  other = await createPartner(svc);
  const made = await Promise.all([
    createOnboardedMerchant(svc, p.testKey),
    ...(['eur', 'jpy', 'kwd', 'inr'] as const).map((c) => createOnboardedMerchant(svc, p.testKey, { display_currency: c })),
    createOnboardedMerchant(svc, p.liveKey),
    createOnboardedMerchant(svc, other.testKey),
  ]);
  [m.usd, m.eur, m.jpy, m.kwd, m.inr, liveMerchant, foreignMerchant] = made.map((x) => x.id);
});
afterAll(async () => {
  await closeSql();
  await svc?.close();
});

/** A new all-scope key of partner p (test mode unless told), so each test has its own rate-limit buckets. */
const freshKey = (mode: 'test' | 'live' = 'test', partner: TestPartner = p) => createKey(svc, partner.id, { mode });
const getReq = (key: string, id: string, base = svc.publicUrl) => call(base, 'GET', `/api/v1/requests/${id}`, { key });
const list = (key: string, q = '') => call(svc.publicUrl, 'GET', `/api/v1/requests${q}`, { key });
const cancel = (key: string, id: string) => call(svc.publicUrl, 'POST', `/api/v1/requests/${id}/cancel`, { key });

const pow10 = (n: number) => 10n ** BigInt(n);
/** DESIGN §3, written out: ceil(fiat × 10^6 ÷ (rate × 10^exp)) with rate = n / d. */
function expectedAmount(fiat: bigint, exp: number, n: bigint, d: bigint): string {
  const num = fiat * pow10(6) * d;
  const den = n * pow10(exp);
  return (num / den + (num % den === 0n ? 0n : 1n)).toString();
}

function expectError(r: Reply, status: number, error: string) {
  expect({ status: r.status, ok: r.body?.ok, error: r.body?.error }).toEqual({ status, ok: false, error });
}

describe('create: the response (spec §2.1)', () => {
  it('201 with exactly the fields of §2.1 and their documented forms', async () => {
    const key = await freshKey();
    const r = await createRequest(svc, key, {
      account_id: m.usd, fiat_amount_int: 4321, memo: 'two coffees', metadata: { order: 'A-1', 'note é': 'ü' },
      payment_mode: 'pos', customer_name: 'Ann', customer_email: 'ann@example.com', customer_phone: '+1 555 0100',
    });
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(REQUEST_FIELDS);
    const token = testEnv().token.toLowerCase();
    expect(r.body).toEqual({
      ok: true,
      request_id: expect.stringMatching(UUID_RE),
      status: 'requested',
      proof_status: 'none',
      pay_page_url: `http://localhost:3999/pay/${r.body.request_id}`,
      expires_at: expect.stringMatching(ISO_MS_RE),
      created_at: expect.stringMatching(ISO_MS_RE),
      proof_verified_at: null,
      tx_hash: null,
      amount: '43210000',
      asset_id: `eip155:31337/erc20:${token}`,
      fiat_amount: 4321,
      fiat_currency: 'usd',
      account_id: m.usd,
      metadata: { order: 'A-1', 'note é': 'ü' },
    });
    // The partner default expiry is 60 minutes; both moments come from one clock reading.
    expect(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)).toBe(60 * 60000);
    expect(Math.abs(Date.parse(r.body.created_at) - Date.now())).toBeLessThan(60000);
    expect(svc.config.payUrl).toBe('http://localhost:3999/pay');
  });

  it('metadata defaults to {}', async () => {
    const r = await mustCreateRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 4322 });
    expect(r.metadata).toEqual({});
  });

  it.each([
    // [merchant currency, fiat minor units, rate as n/d, fiat exponent, amount worked out by hand]
    ['usd', 1, 1n, 1n, 2, '10000'],
    ['usd', 1234, 1n, 1n, 2, '12340000'],
    ['usd', 2147483647, 1n, 1n, 2, '21474836470000'],
    ['eur', 1, 92n, 100n, 2, '10870'], // 0.01 / 0.92 = 0.0108695… token
    ['eur', 1000, 92n, 100n, 2, '10869566'], // 10.00 / 0.92 = 10.8695652… tokens
    ['jpy', 1, 15025n, 100n, 0, '6656'], // 1 / 150.25 = 0.0066555… token
    ['jpy', 1000, 15025n, 100n, 0, '6655575'],
    ['jpy', 2147483647, 15025n, 100n, 0, '14292736419302'], // 214 748 364 700 000 000 / 15 025 = …301.16
    ['kwd', 1, 307n, 1000n, 3, '3258'], // 0.001 / 0.307 = 0.0032573… token
    ['kwd', 1000, 307n, 1000n, 3, '3257329'],
    ['inr', 100, 832n, 10n, 2, '12020'], // 1.00 / 83.2 = 0.0120192… token
  ] as const)('%s %i minor units → amount per DESIGN §3', async (currency, fiat, n, d, exp, byHand) => {
    const r = await createRequest(svc, await freshKey(), { account_id: m[currency], fiat_amount_int: fiat });
    expect(r.status).toBe(201);
    expect(r.body.fiat_currency).toBe(currency);
    expect(r.body.fiat_amount).toBe(fiat);
    expect(expectedAmount(BigInt(fiat), exp, n, d)).toBe(byHand);
    expect(r.body.amount).toBe(byHand);
  });

  it('expires_at follows the partner default expiry', async () => {
    const q = await createPartner(svc, { allowed_expiry_minutes: [15, 90], default_expiry_minutes: 90 });
    const mm = await createOnboardedMerchant(svc, q.testKey);
    const r = await mustCreateRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100 });
    expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBe(90 * 60000);
  });

  it('service mode with customer_name → 201, default expiry 10080 minutes, customer fields not shown', async () => {
    const r = await createRequest(svc, await freshKey(), {
      account_id: m.usd, fiat_amount_int: 5000, payment_mode: 'service', customer_name: 'Bob', customer_email: 'b@example.com',
    });
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(REQUEST_FIELDS);
    expect(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)).toBe(10080 * 60000);
  });

  it('service mode with an allowed expiry_minutes uses it', async () => {
    const r = await mustCreateRequest(svc, await freshKey(), {
      account_id: m.usd, fiat_amount_int: 5001, payment_mode: 'service', customer_name: 'Bob', expiry_minutes: 15,
    });
    expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBe(15 * 60000);
  });

  it('pos mode with an allowed expiry_minutes uses it', async () => {
    const r = await mustCreateRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 5002, expiry_minutes: 1440 });
    expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBe(1440 * 60000);
  });

  it('fiat_currency_code matching the merchant currency in any case is accepted', async () => {
    const key = await freshKey();
    for (const code of ['usd', 'USD', 'uSd']) {
      const r = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 6000, fiat_currency_code: code });
      expect({ code, status: r.status, currency: r.body.fiat_currency }).toEqual({ code, status: 201, currency: 'usd' });
    }
    const j = await createRequest(svc, key, { account_id: m.jpy, fiat_amount_int: 6000, fiat_currency_code: 'JPY' });
    expect(j.status).toBe(201);
  });

  it('memo of 500 characters, customer fields at their maxima are accepted', async () => {
    const r = await createRequest(svc, await freshKey(), {
      account_id: m.usd, fiat_amount_int: 6001, memo: 'm'.repeat(500), customer_name: 'n'.repeat(200),
      customer_email: 'e'.repeat(254), customer_phone: 'p'.repeat(50),
    });
    expect(r.status).toBe(201);
  });

  it('metadata at its limits round-trips unchanged', async () => {
    const metadata: Record<string, string> = {};
    for (let i = 0; i < 20; i++) metadata[`${String(i).padStart(2, '0')}${'k'.repeat(38)}`] = i % 2 ? 'v'.repeat(500) : '';
    metadata['00kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk'] = '✓ unicode — "quotes" \\ backslash\nnewline';
    const key = await freshKey();
    const r = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 6002, metadata });
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual(metadata);
    expect((await getReq(key, r.body.request_id)).body.metadata).toEqual(metadata);
  });

  it('metadata keeps its keys in the order sent, as text too (spec §2.1 "round-trips unchanged")', async () => {
    // Longest key first: jsonb would have sorted them shortest first.
    const sent = '{"zeta_order":"1","a":"2","mm":"3"}';
    const key = await freshKey();
    const r = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 6003, metadata: JSON.parse(sent) });
    expect(r.status).toBe(201);
    const textOf = (body: { metadata: unknown }) => JSON.stringify(body.metadata);
    expect(textOf(r.body)).toBe(sent);
    expect(r.text).toContain(`"metadata":${sent}`);
    expect(textOf((await getReq(key, r.body.request_id)).body)).toBe(sent);
    const listed = await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${m.usd}&since=${encodeURIComponent(r.body.created_at)}`, { key });
    expect(listed.body.requests.filter((x: any) => x.request_id === r.body.request_id).map(textOf)).toEqual([sent]);
  });

  it('metadata keys named like a method of Object.prototype round-trip, and their values are checked (they were dropped: 201 with {})', async () => {
    const metadata = { toString: 'x', valueOf: 'y', hasOwnProperty: 'z', __lookupGetter__: 'w', order: '7' };
    const key = await freshKey();
    const r = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 6004, metadata });
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual(metadata);
    expect((await getReq(key, r.body.request_id)).body.metadata).toEqual(metadata);
    const bad = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 6005, metadata: { valueOf: 5 } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ok: false, error: 'invalid_request' });
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'metadata' })]);
  });
});

describe('create: validation (spec §4.1, §7, DESIGN §3)', () => {
  let key: string;
  let n = 0;
  /** Rotates to a fresh key every 50 calls. */
  async function create(body: unknown): Promise<Reply> {
    if (n++ % 50 === 0) key = await freshKey();
    return createRequest(svc, key, body);
  }
  const base = () => ({ account_id: m.usd, fiat_amount_int: 100 });

  it.each([
    ['account_id missing', { fiat_amount_int: 100 }, 'account_id'],
    ['account_id not a uuid', { account_id: 'abc', fiat_amount_int: 100 }, 'account_id'],
    ['account_id a number', { account_id: 123, fiat_amount_int: 100 }, 'account_id'],
    ['account_id empty', { account_id: '', fiat_amount_int: 100 }, 'account_id'],
  ])('%s → 400 invalid_request', async (_label, body, field) => {
    const r = await create(body);
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  });

  it.each([
    ['0', 0],
    ['-1', -1],
    ['2147483648', 2147483648],
    ['1.5', 1.5],
    ['"100" (a string)', '100'],
    ['null', null],
    ['true', true],
    ['1e10', 1e10],
    ['an object', { value: 100 }],
  ])('fiat_amount_int %s → 400 invalid_request', async (_label, value) => {
    const r = await create({ ...base(), fiat_amount_int: value });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field: 'fiat_amount_int', message: expect.any(String) }]));
  });

  it('fiat_amount_int missing → 400 invalid_request', async () => {
    const r = await create({ account_id: m.usd });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors.map((e: any) => e.field)).toContain('fiat_amount_int');
  });

  it('an invalid_request body is exactly {ok, error, errors[{field, message}]}', async () => {
    const r = await create({ ...base(), fiat_amount_int: 0 });
    expect(keysOf(r.body)).toEqual(['error', 'errors', 'ok']);
    for (const e of r.body.errors) expect(keysOf(e)).toEqual(['field', 'message']);
  });

  it('currency_mismatch carries expected_fiat_code', async () => {
    const r = await create({ ...base(), fiat_currency_code: 'eur' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'usd' });
    const j = await create({ account_id: m.jpy, fiat_amount_int: 100, fiat_currency_code: 'USD' });
    expect(j.body).toEqual({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'jpy' });
  });

  it.each([['US'], ['usdd'], ['12a'], [840]])('fiat_currency_code %p (malformed) → 400 invalid_request', async (code) => {
    const r = await create({ ...base(), fiat_currency_code: code });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors[0].field).toBe('fiat_currency_code');
  });

  it('memo of 501 characters → 400 invalid_request', async () => {
    const r = await create({ ...base(), memo: 'm'.repeat(501) });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors[0].field).toBe('memo');
  });

  it.each([
    ['31 chars', 'a'.repeat(31)],
    ['65 chars', 'a'.repeat(65)],
    ['with +', `${'a'.repeat(31)}+`],
    ['with /', `${'a'.repeat(31)}/`],
    ['with =', `${'a'.repeat(31)}=`],
    ['with a space', `${'a'.repeat(16)} ${'a'.repeat(16)}`],
    ['with unicode', `${'a'.repeat(31)}é`],
    ['empty', ''],
    ['a number', 12345678901234567890],
  ])('idempotency_key %s → 400 invalid_idempotency_key', async (_label, k) => {
    const r = await create({ ...base(), idempotency_key: k });
    expectError(r, 400, 'invalid_idempotency_key');
  });

  it.each([
    ['32 hex', '0123456789abcdef0123456789abcdef'],
    ['64 base64url', `${'Az09_-'.repeat(10)}abcd`],
  ])('idempotency_key %s is accepted', async (_label, k) => {
    const r = await create({ account_id: m.usd, fiat_amount_int: 7000, idempotency_key: k });
    expect(r.status).toBe(201);
  });

  const many = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));
  it.each([
    ['21 keys', many(21)],
    ['a key of 41 chars', { ['k'.repeat(41)]: 'v' }],
    ['a value of 501 chars', { k: 'v'.repeat(501) }],
    ['a number value', { k: 1 }],
    ['a null value', { k: null }],
    ['a boolean value', { k: false }],
    ['a nested object', { k: { a: 'b' } }],
    ['an array value', { k: ['a'] }],
    ['an empty key', { '': 'v' }],
    ['metadata an array', ['a', 'b']],
    ['metadata a string', 'order=1'],
    ['metadata a number', 7],
  ])('metadata with %s → 400 invalid_request', async (_label, metadata) => {
    const r = await create({ ...base(), metadata });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors.every((e: any) => e.field.startsWith('metadata'))).toBe(true);
  });

  it('service mode without customer_name → 400 customer_name_required', async () => {
    const r = await create({ ...base(), payment_mode: 'service' });
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('customer_name_required');
  });

  it.each([
    ['customer_name of 201 chars', { customer_name: 'n'.repeat(201) }, 'customer_name'],
    ['customer_name of 201 chars in service mode', { payment_mode: 'service', customer_name: 'n'.repeat(201) }, 'customer_name'],
    ['customer_email of 255 chars', { customer_email: 'e'.repeat(255) }, 'customer_email'],
    ['customer_phone of 51 chars', { customer_phone: 'p'.repeat(51) }, 'customer_phone'],
    ['payment_mode unknown', { payment_mode: 'online' }, 'payment_mode'],
    ['payment_mode in upper case', { payment_mode: 'POS' }, 'payment_mode'],
    ['expiry_minutes a string', { expiry_minutes: '15' }, 'expiry_minutes'],
    ['expiry_minutes fractional', { expiry_minutes: 15.5 }, 'expiry_minutes'],
    ['an unknown field', { amount: '1000' }, 'amount'],
    ['a misspelt field', { fiat_amount: 100 }, 'fiat_amount'],
  ])('%s → 400 invalid_request naming the field', async (_label, extra, field) => {
    const r = await create({ ...base(), ...extra });
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  });

  it('every optional field sent as null reads as absent (JSON clients send unset fields as null)', async () => {
    // Before: fiat_currency_code null → currency_mismatch, expiry_minutes null → invalid_expiry_minutes,
    // customer_name null → invalid_request, while memo, metadata, payment_mode and the rest read null as absent.
    const nulls = {
      fiat_currency_code: null, memo: null, idempotency_key: null, metadata: null, payment_mode: null,
      customer_name: null, customer_email: null, customer_phone: null, expiry_minutes: null,
    };
    const r = await create({ ...base(), ...nulls });
    expect({ status: r.status, text: r.status === 201 ? '' : r.text }).toEqual({ status: 201, text: '' });
    expect(r.body).toMatchObject({ fiat_currency: 'usd', metadata: {} });
    expect(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)).toBe(60 * 60000);
    for (const [field, value] of Object.entries(nulls)) {
      const one = await create({ ...base(), [field]: value });
      expect({ field, status: one.status }).toEqual({ field, status: 201 });
    }
    // In service mode a null name is no name.
    const service = await create({ ...base(), payment_mode: 'service', customer_name: null });
    expectError(service, 400, 'customer_name_required');
  });

  it.each([[7], [45], [10081], [16]])('expiry_minutes %i (not allowed) → 400 invalid_expiry_minutes with the allowed list', async (v) => {
    const r = await create({ ...base(), expiry_minutes: v });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'invalid_expiry_minutes', allowed_expiry_minutes: [15, 30, 60, 120, 360, 1440, 4320, 10080] });
  });

  it('a change of the partner\'s expiry settings applies to the very next create', async () => {
    const q = await createPartner(svc);
    const mm = await createOnboardedMerchant(svc, q.testKey);
    expect((await createRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100, expiry_minutes: 60 })).status).toBe(201);
    const patched = await admin(svc, 'PATCH', `/partners/${q.id}`, { allowed_expiry_minutes: [20, 40], default_expiry_minutes: 40 });
    expect(patched.status).toBe(200);
    const r = await createRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100, expiry_minutes: 60 });
    expect(r.body).toEqual({ ok: false, error: 'invalid_expiry_minutes', allowed_expiry_minutes: [20, 40] });
    const d = await mustCreateRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100 });
    expect(Date.parse(d.expires_at) - Date.parse(d.created_at)).toBe(40 * 60000);
  });

  it('the allowed list shown is the partner\'s own', async () => {
    const q = await createPartner(svc, { allowed_expiry_minutes: [5, 25], default_expiry_minutes: 5 });
    const mm = await createOnboardedMerchant(svc, q.testKey);
    const r = await createRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100, expiry_minutes: 60 });
    expect(r.body).toEqual({ ok: false, error: 'invalid_expiry_minutes', allowed_expiry_minutes: [5, 25] });
    expect((await createRequest(svc, q.testKey, { account_id: mm.id, fiat_amount_int: 100, expiry_minutes: 25 })).status).toBe(201);
  });
});

describe('create: the merchant', () => {
  it('another partner\'s merchant → 404, the same bytes as a merchant that does not exist', async () => {
    const key = await freshKey();
    const foreign = await createRequest(svc, key, { account_id: foreignMerchant, fiat_amount_int: 100 });
    const missing = await createRequest(svc, key, { account_id: randomUUID(), fiat_amount_int: 100 });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ ok: false, error: 'not_found' });
    expect(foreign.text).toBe(missing.text);
  });

  it('a merchant of the other mode → 400 merchant_mode_mismatch (both directions)', async () => {
    const r = await createRequest(svc, await freshKey(), { account_id: liveMerchant, fiat_amount_int: 100 });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'merchant_mode_mismatch' });
    const l = await createRequest(svc, await freshKey('live'), { account_id: m.usd, fiat_amount_int: 100 });
    expect(l.body).toEqual({ ok: false, error: 'merchant_mode_mismatch' });
    // The live key works on the live merchant.
    expect((await createRequest(svc, p.liveKey, { account_id: liveMerchant, fiat_amount_int: 100 })).status).toBe(201);
  });

  it('an incomplete merchant → 400 merchant_onboarding_incomplete', async () => {
    const key = await freshKey();
    const shell = await createShellMerchant(svc, key, { wallet_address: randomAddress() });
    const r = await createRequest(svc, key, { account_id: shell.merchant_id, fiat_amount_int: 100 });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'merchant_onboarding_incomplete' });
  });

  it('a disabled merchant → 400 merchant_disabled, yet a replay of an earlier key returns the original', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const k = idemKey();
    const original = await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 900, idempotency_key: k });
    expect((await admin(svc, 'POST', `/merchants/${mm.id}/disable`)).status).toBe(200);

    const fresh = await createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 900 });
    expect(fresh.status).toBe(400);
    expect(fresh.body).toEqual({ ok: false, error: 'merchant_disabled' });
    const freshKeyed = await createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 900, idempotency_key: idemKey() });
    expect(freshKeyed.body).toEqual({ ok: false, error: 'merchant_disabled' });

    const replay = await createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 900, idempotency_key: k });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ ...original, idempotent_replay: true });

    // Reads and cancel still work on a disabled merchant's requests.
    expect((await getReq(key, original.request_id)).status).toBe(200);
    expect((await admin(svc, 'POST', `/merchants/${mm.id}/enable`)).status).toBe(200);
    expect((await createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 900 })).status).toBe(201);
  });
});

describe('create: DESIGN §3 order of checks', () => {
  it('an invalid body with a bad key → 401', async () => {
    for (const key of [undefined, 'prs_test_nope', `prs_live_${p.testKey.slice(9)}`]) {
      const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, body: { fiat_amount_int: -5, junk: true } });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ ok: false, error: 'unauthorized' });
      const j = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, raw: '{"not json' });
      expect(j.status).toBe(401);
      const big = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key, raw: JSON.stringify({ memo: 'x'.repeat(70000) }) });
      expect(big.status).toBe(401);
    }
  });

  it('an invalid body with an under-scoped key → 403', async () => {
    const readOnly = await createKey(svc, p.id, { mode: 'test', scopes: ['requests:read', 'merchants:read', 'merchants:write'] });
    const r = await createRequest(svc, readOnly, { fiat_amount_int: -5 });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ ok: false, error: 'insufficient_scope', required_scope: 'requests:write' });
  });

  it('body validation comes before the merchant lookup', async () => {
    const key = await freshKey();
    const unknown = randomUUID();
    expectError(await createRequest(svc, key, { account_id: unknown, fiat_amount_int: 0 }), 400, 'invalid_request');
    expectError(await createRequest(svc, key, { account_id: foreignMerchant, fiat_amount_int: 100, idempotency_key: 'short' }), 400, 'invalid_idempotency_key');
    expectError(await createRequest(svc, key, { account_id: unknown, fiat_amount_int: 100, payment_mode: 'service' }), 400, 'customer_name_required');
  });

  it('an unknown merchant with a replayed key → 404, not the replay', async () => {
    const key = await freshKey();
    const k = idemKey();
    await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 910, idempotency_key: k });
    const r = await createRequest(svc, key, { account_id: randomUUID(), fiat_amount_int: 910, idempotency_key: k });
    expectError(r, 404, 'not_found');
    const f = await createRequest(svc, key, { account_id: foreignMerchant, fiat_amount_int: 910, idempotency_key: k });
    expectError(f, 404, 'not_found');
  });

  it('ownership before expiry and currency: another partner\'s merchant with a bad expiry → 404', async () => {
    const r = await createRequest(svc, await freshKey(), { account_id: foreignMerchant, fiat_amount_int: 100, expiry_minutes: 7, fiat_currency_code: 'jpy' });
    expectError(r, 404, 'not_found');
  });

  it('mode before onboarding: an incomplete merchant of the other mode → merchant_mode_mismatch', async () => {
    const liveShell = await createShellMerchant(svc, await freshKey('live'), {});
    const r = await createRequest(svc, await freshKey(), { account_id: liveShell.merchant_id, fiat_amount_int: 100 });
    expectError(r, 400, 'merchant_mode_mismatch');
  });

  it('onboarding before disabled and currency', async () => {
    const key = await freshKey();
    const shell = await createShellMerchant(svc, key, {});
    await admin(svc, 'POST', `/merchants/${shell.merchant_id}/disable`);
    const r = await createRequest(svc, key, { account_id: shell.merchant_id, fiat_amount_int: 100, fiat_currency_code: 'eur', expiry_minutes: 7 });
    expectError(r, 400, 'merchant_onboarding_incomplete');
  });

  it('disabled before currency and expiry', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    await admin(svc, 'POST', `/merchants/${mm.id}/disable`);
    const r = await createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 100, fiat_currency_code: 'eur', expiry_minutes: 7 });
    expectError(r, 400, 'merchant_disabled');
  });

  it('currency before expiry', async () => {
    const r = await createRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 100, fiat_currency_code: 'eur', expiry_minutes: 7 });
    expectError(r, 400, 'currency_mismatch');
  });

  it('the replay comes before currency and expiry: a replay with a mismatching currency or bad expiry returns the original', async () => {
    const key = await freshKey();
    const k = idemKey();
    const original = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 920, idempotency_key: k });
    const r = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 1, idempotency_key: k, fiat_currency_code: 'eur', expiry_minutes: 7 });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ...original, idempotent_replay: true });
  });
});

describe('create: idempotency (spec §4.1 rules 1–4)', () => {
  it('same key, same merchant → 200 replay of the original, new amounts and metadata ignored', async () => {
    const key = await freshKey();
    const k = idemKey();
    const first = await createRequest(svc, key, { account_id: m.eur, fiat_amount_int: 2500, idempotency_key: k, metadata: { v: '1' }, memo: 'one' });
    expect(first.status).toBe(201);
    expect(first.body.idempotent_replay).toBeUndefined();
    const again = await createRequest(svc, key, { account_id: m.eur, fiat_amount_int: 9999, idempotency_key: k, metadata: { v: '2', extra: 'x' }, memo: 'two', expiry_minutes: 15 });
    expect(again.status).toBe(200);
    expect(keysOf(again.body)).toEqual([...REQUEST_FIELDS, 'idempotent_replay'].sort());
    expect(again.body.idempotent_replay).toBe(true);
    expect(withoutReplay(again.body)).toEqual(first.body);
    // The stored request is the original one, and a plain read carries no replay flag.
    const got = await getReq(key, first.body.request_id);
    expect(got.body).toEqual(first.body);
  });

  it('the replay works from another key of the same partner and mode', async () => {
    const k = idemKey();
    const first = await mustCreateRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 2501, idempotency_key: k });
    const r = await createRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 2501, idempotency_key: k });
    expect(r.status).toBe(200);
    expect(r.body.request_id).toBe(first.request_id);
  });

  it('same key on a different merchant of the same partner → a new request', async () => {
    const key = await freshKey();
    const k = idemKey();
    const a = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 2502, idempotency_key: k });
    const b = await createRequest(svc, key, { account_id: m.jpy, fiat_amount_int: 2502, idempotency_key: k });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.request_id).not.toBe(a.body.request_id);
    expect(b.body.idempotent_replay).toBeUndefined();
  });

  it('the same key string used by another partner is independent', async () => {
    const k = idemKey();
    const a = await createRequest(svc, await freshKey(), { account_id: m.usd, fiat_amount_int: 2503, idempotency_key: k });
    const b = await createRequest(svc, other.testKey, { account_id: foreignMerchant, fiat_amount_int: 2503, idempotency_key: k });
    expect([a.status, b.status]).toEqual([201, 201]);
  });

  it('keys are case-sensitive', async () => {
    const key = await freshKey();
    const suffix = idemKey().slice(0, 8);
    const a = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 2504, idempotency_key: `${'A'.repeat(32)}${suffix}` });
    const b = await createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 2504, idempotency_key: `${'a'.repeat(32)}${suffix}` });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.request_id).not.toBe(b.body.request_id);
  });

  it('without a key every create is a new request', async () => {
    const key = await freshKey();
    const body = { account_id: m.usd, fiat_amount_int: 2505, metadata: { same: 'yes' } };
    const a = await createRequest(svc, key, body);
    const b = await createRequest(svc, key, body);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.request_id).not.toBe(b.body.request_id);
    expect(b.body.idempotent_replay).toBeUndefined();
  });

  it('50 parallel creates with one key → one request, all 2xx, exactly one not a replay', async () => {
    const key = await freshKey();
    const k = idemKey();
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => createRequest(svc, key, { account_id: m.usd, fiat_amount_int: 3000 + i, idempotency_key: k })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 201)).toBe(true);
    expect(new Set(replies.map((r) => r.body.request_id)).size).toBe(1);
    const originals = replies.filter((r) => r.body.idempotent_replay === undefined);
    expect(originals).toHaveLength(1);
    expect(originals[0].status).toBe(201);
    for (const r of replies.filter((x) => x !== originals[0])) {
      expect(r.status).toBe(200);
      expect(withoutReplay(r.body)).toEqual(originals[0].body);
    }
    const rows = await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE idempotency_key = $1`, [k]);
    expect(rows[0].n).toBe(1);
  });
});

describe('unique amounts per merchant (DESIGN §3)', () => {
  it('the same price twice in parallel → two different amounts', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const [a, b] = await Promise.all([
      createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1500 }),
      createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1500 }),
    ]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.amount).not.toBe(b.body.amount);
    expect([a.body.amount, b.body.amount].sort()).toEqual(['15000000', '15000001']);
  });

  it('each collision adds the smallest number of base units', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const amounts: string[] = [];
    for (let i = 0; i < 4; i++) amounts.push((await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1500 })).amount);
    expect(amounts).toEqual(['15000000', '15000001', '15000002', '15000003']);
    // A price that converts into the taken range skips to the first free amount.
    expect((await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1500 })).amount).toBe('15000004');
  });

  it('an amount freed inside a run of held ones is the next one taken, then the run goes on', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1550 }));
    expect(made.map((r) => r.amount)).toEqual(['15500000', '15500001', '15500002', '15500003', '15500004']);
    // The second's claim window closed (the sweep freed its amount): the smallest free amount is its.
    await sql(`UPDATE payment_requests SET amount_locked = false WHERE id = $1`, [made[1].request_id]);
    expect((await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1550 })).amount).toBe('15500001');
    expect((await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1550 })).amount).toBe('15500005');
  });

  it('a voided request still holds its amount (a payment may still arrive within the window)', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const a = await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1600 });
    expect((await cancel(key, a.request_id)).status).toBe(200);
    const b = await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1600 });
    expect(b.amount).toBe('16000001');
  });

  it('different merchants may hold the same amount', async () => {
    const key = await freshKey();
    const [x, y] = await Promise.all([createOnboardedMerchant(svc, key), createOnboardedMerchant(svc, key)]);
    const a = await mustCreateRequest(svc, key, { account_id: x.id, fiat_amount_int: 1700 });
    const b = await mustCreateRequest(svc, key, { account_id: y.id, fiat_amount_int: 1700 });
    expect(a.amount).toBe('17000000');
    expect(b.amount).toBe('17000000');
  });

  it('20 parallel creates of one price → 20 distinct consecutive amounts', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const replies = await Promise.all(Array.from({ length: 20 }, () => createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1800 })));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(201));
    const amounts = replies.map((r) => BigInt(r.body.amount)).sort((a, b) => (a < b ? -1 : 1));
    expect(amounts).toEqual(Array.from({ length: 20 }, (_, i) => 18000000n + BigInt(i)));
  });

  it('20 parallel creates of a price already held, one of them a replay → the next 19 amounts and the replay\'s original', async () => {
    const key = await freshKey();
    const mm = await createOnboardedMerchant(svc, key);
    const held = await mustCreateRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1900, idempotency_key: 'held-1900-0123456789abcdef0123456789' });
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      createRequest(svc, key, { account_id: mm.id, fiat_amount_int: 1900, ...(i === 7 ? { idempotency_key: 'held-1900-0123456789abcdef0123456789' } : {}) })));
    expect(replies.map((r) => r.status).sort()).toEqual([200, ...Array(19).fill(201)]);
    expect(replies[7].body).toMatchObject({ request_id: held.request_id, amount: '19000000' });
    const amounts = replies.filter((r) => r.status === 201).map((r) => BigInt(r.body.amount)).sort((a, b) => (a < b ? -1 : 1));
    expect(amounts).toEqual(Array.from({ length: 19 }, (_, i) => 19000001n + BigInt(i)));
  });
});

describe('GET /api/v1/requests/:id', () => {
  let created: any;
  let key: string;
  beforeAll(async () => {
    key = await freshKey();
    created = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 8000, metadata: { a: 'b' } });
  });

  it('200 with the request object, equal to the create response, on both listeners', async () => {
    for (const base of [svc.publicUrl, svc.adminUrl]) {
      const r = await getReq(key, created.request_id, base);
      expect(r.status).toBe(200);
      expect(r.body).toEqual(created);
    }
    expect((await getReq(key, created.request_id.toUpperCase())).body.request_id).toBe(created.request_id);
  });

  it('another partner, the other mode, malformed ids: 404 with the same bytes as a missing request', async () => {
    const missing = await getReq(key, randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ ok: false, error: 'not_found' });
    for (const [label, k, id] of [
      ['another partner', other.testKey, created.request_id],
      ['another partner live', other.liveKey, created.request_id],
      ['the other mode', p.liveKey, created.request_id],
      ['malformed', key, 'nope'],
      ['sql-ish', key, "x' OR 1=1 --"],
    ]) {
      const r = await getReq(k, encodeURIComponent(id));
      expect({ label, status: r.status, text: r.text }).toEqual({ label, status: 404, text: missing.text });
    }
  });
});

describe('PAY_URL (DESIGN §2, §4): the pay page is served at {pay_url}/<request_id>', () => {
  // A PAY_URL with a path other than /pay, or none (a host of its own routed to this listener): the
  // pay_page_url the partner hands out must open the page, not a 404.
  it.each([
    ['a path of its own', 'http://localhost:3999/checkout'],
    ['a host of its own, no path', 'http://pay.localhost:3999'],
  ])('%s', async (_label, payUrl) => {
    const alt = await startService({ env: { PAY_URL: payUrl } });
    try {
      const partner = await createPartner(alt);
      const merchant = await createOnboardedMerchant(alt, partner.testKey);
      const created = await mustCreateRequest(alt, partner.testKey, { account_id: merchant.id, fiat_amount_int: 1234 });
      expect(created.pay_page_url).toBe(`${payUrl}/${created.request_id}`);
      const page = await fetch(`${alt.publicUrl}${new URL(created.pay_page_url).pathname}`);
      expect({ status: page.status, type: page.headers.get('content-type') }).toEqual({ status: 200, type: 'text/html; charset=utf-8' });
      expect(await page.text()).toContain(created.request_id);
      // Its API and the partner API are where they always are; a GET of the page opens nothing.
      const state = await call(alt.publicUrl, 'GET', `/pay/api/${created.request_id}`);
      expect({ status: state.status, request_status: state.body.status }).toEqual({ status: 200, request_status: 'requested' });
      // Not served on the admin listener, like every page.
      expect((await fetch(`${alt.adminUrl}${new URL(created.pay_page_url).pathname}`)).status).toBe(404);
    } finally {
      await alt.close();
    }
  });
});

describe('GET /api/v1/requests: list', () => {
  let q: TestPartner;
  let a: string;
  let b: string;
  let all: any[];
  let voided: any;
  let lapsed: any;
  let attached: any;

  beforeAll(async () => {
    q = await createPartner(svc);
    [a, b] = (await Promise.all([createOnboardedMerchant(svc, q.testKey), createOnboardedMerchant(svc, q.testKey)])).map((x) => x.id);
    all = [];
    for (const [acc, fiat] of [[a, 100], [b, 200], [a, 300], [b, 400], [a, 500], [a, 600]] as const) {
      all.push(await mustCreateRequest(svc, q.testKey, { account_id: acc, fiat_amount_int: fiat }));
    }
    voided = (await cancel(q.testKey, all[1].request_id)).body;
    expect(voided.status).toBe('voided');
    // Stored state no endpoint reaches yet: one request past its expiry, one with a proof attached.
    lapsed = all[2];
    attached = all[3];
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 minute' WHERE id = $1`, [lapsed.request_id]);
    await sql(`UPDATE payment_requests SET proof_status = 'attached', tx_hash = $2 WHERE id = $1`, [attached.request_id, `0x${'ab'.repeat(32)}`]);
    // Noise that must never show.
    await mustCreateRequest(svc, q.liveKey, { account_id: (await createOnboardedMerchant(svc, q.liveKey)).id, fiat_amount_int: 100 });
  });

  const ids = (r: Reply) => r.body.requests.map((x: any) => x.request_id);
  const idsOf = (xs: any[]) => xs.map((x) => x.request_id);

  it('lists every request of the partner and mode, ordered by created_at then id, with the envelope', async () => {
    const r = await list(q.testKey);
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(['has_more', 'limit', 'offset', 'ok', 'requests']);
    expect(r.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    expect(ids(r)).toEqual(idsOf(all));
    for (const x of r.body.requests) expect(keysOf(x)).toEqual(REQUEST_FIELDS);
    const sorted = [...r.body.requests].sort((x: any, y: any) =>
      x.created_at < y.created_at ? -1 : x.created_at > y.created_at ? 1 : x.request_id < y.request_id ? -1 : 1);
    expect(idsOf(sorted)).toEqual(ids(r));
    expect((await list(q.liveKey)).body.requests).toHaveLength(1);
    expect((await list(other.testKey, `?account_id=${a}`)).body.requests).toEqual([]);
  });

  it('items are the same objects get returns (effective status included)', async () => {
    const r = await list(q.testKey);
    for (const x of r.body.requests) expect((await getReq(q.testKey, x.request_id)).body).toEqual(x);
    expect(r.body.requests.find((x: any) => x.request_id === lapsed.request_id).status).toBe('expired');
  });

  it.each([
    ['status=requested', () => [all[0], all[3], all[4], all[5]]],
    ['status=voided', () => [all[1]]],
    ['status=expired', () => [all[2]]],
    ['status=opened', () => []],
    ['proof_status=none', () => [all[0], all[1], all[2], all[4], all[5]]],
    ['proof_status=attached', () => [all[3]]],
    ['proof_status=verified', () => []],
    ['status=requested&proof_status=none', () => [all[0], all[4], all[5]]],
  ])('filters by %s', async (query, expected) => {
    const r = await list(q.testKey, `?${query}`);
    expect(r.status).toBe(200);
    expect(ids(r)).toEqual(idsOf(expected()));
  });

  it('filters by account_id', async () => {
    expect(ids(await list(q.testKey, `?account_id=${a}`))).toEqual(idsOf([all[0], all[2], all[4], all[5]]));
    expect(ids(await list(q.testKey, `?account_id=${b}&status=voided`))).toEqual(idsOf([all[1]]));
    expect(ids(await list(q.testKey, `?account_id=${randomUUID()}`))).toEqual([]);
  });

  it('filters by since (>=) and until (<) on created_at', async () => {
    // Built from the shown created_at, the cursor is exact (DESIGN §3: millisecond precision everywhere).
    const third = all[2].created_at;
    const fromThird = all.filter((x) => x.created_at >= third);
    const beforeThird = all.filter((x) => x.created_at < third);
    expect(ids(await list(q.testKey, `?since=${encodeURIComponent(third)}`))).toEqual(idsOf(fromThird));
    expect(ids(await list(q.testKey, `?until=${encodeURIComponent(third)}`))).toEqual(idsOf(beforeThird));
    expect(fromThird.map((x) => x.request_id)).toContain(all[2].request_id);
    expect(beforeThird.map((x) => x.request_id)).not.toContain(all[2].request_id);
    const r = await list(q.testKey, `?since=${encodeURIComponent(third)}&until=${encodeURIComponent(third)}`);
    expect(r.body.requests).toEqual([]);
    expect(ids(await list(q.testKey, `?since=2000-01-01T00:00:00.000Z&until=2999-01-01T00:00:00Z`))).toEqual(idsOf(all));
    // The same moment written with an offset selects the same rows.
    const t = new Date(Date.parse(third) + 2 * 3600000).toISOString().replace('Z', '+02:00');
    expect(ids(await list(q.testKey, `?since=${encodeURIComponent(t)}`))).toEqual(idsOf(fromThird));
  });

  it('pages with limit, offset and has_more', async () => {
    const pages: string[] = [];
    for (let offset = 0; ; offset += 4) {
      const r = await list(q.testKey, `?limit=4&offset=${offset}`);
      expect(r.body).toMatchObject({ limit: 4, offset });
      pages.push(...ids(r));
      expect(r.body.has_more).toBe(offset + 4 < all.length);
      if (!r.body.has_more) break;
    }
    expect(pages).toEqual(idsOf(all));
    expect((await list(q.testKey, `?limit=6`)).body.has_more).toBe(false);
    expect((await list(q.testKey, `?limit=5`)).body.has_more).toBe(true);
    expect((await list(q.testKey, `?limit=100&offset=500`)).body).toMatchObject({ requests: [], has_more: false });
  });

  it('paging by a moving since cursor returns every row exactly once, with creates in between', async () => {
    const r = await createPartner(svc);
    const mm = await createOnboardedMerchant(svc, r.testKey);
    const key2 = await freshKey('test', r);
    const expected: string[] = [];
    for (let i = 0; i < 7; i++) expected.push((await mustCreateRequest(svc, key2, { account_id: mm.id, fiat_amount_int: 100 + i })).request_id);
    const seen: string[] = [];
    const seenSet = new Set<string>();
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const reply = await list(r.testKey, `?limit=3${cursor ? `&since=${encodeURIComponent(cursor)}` : ''}`);
      expect(reply.status).toBe(200);
      const items: any[] = reply.body.requests;
      const fresh = items.filter((x) => !seenSet.has(x.request_id));
      // Ties on the cursor's millisecond are the only repeats, and a page must always bring something new.
      expect(fresh.length > 0 || !reply.body.has_more).toBe(true);
      for (const x of fresh) {
        seen.push(x.request_id);
        seenSet.add(x.request_id);
      }
      if (items.length) cursor = items[items.length - 1].created_at;
      // Concurrent activity: a new request lands while the partner is paging.
      if (page < 3) expected.push((await mustCreateRequest(svc, key2, { account_id: mm.id, fiat_amount_int: 200 + page })).request_id);
      if (!reply.body.has_more) break;
    }
    expect(seen).toHaveLength(seenSet.size);
    expect([...seen].sort()).toEqual([...expected].sort());
  });

  it.each([
    'limit=101', 'limit=0', 'limit=-5', 'limit=ten', 'offset=-1', 'offset=1.5', 'status=bogus', 'status=REQUESTED',
    'proof_status=pending', 'since=garbage', 'since=2024-13-01T00:00:00Z', 'until=yesterday', 'account_id=not-uuid',
    // Malformed integers are not guessed at (DESIGN §3: "nothing is silently clamped").
    'limit=1e1', 'limit=0x10', 'limit=%205', 'offset=', 'limit=',
    // ISO 8601 forms that are not a moment (a year, a month, a week, an hour without minutes, a comma fraction):
    // class-validator takes them, Postgres does not (they were a 500).
    'since=2026', 'until=2026-11', 'since=2026-W48', 'until=2026-W48-3', 'since=2026-11-26T10', 'until=2026-11-26T10:00:00,5Z',
    // Forms Postgres reads but JavaScript does not (an ordinal date, the basic format): one reading for every caller.
    'since=2026-330', 'until=20261126',
    // Zone offsets JavaScript reads and Postgres refuses past ±15:59 (they were a 500).
    'since=2024-01-01T00:00%2B16:00', 'until=2024-01-01T00:00%2B23:59', 'since=2024-01-01T00:00-1800',
  ])('%s → 400 invalid_request', async (query) => {
    const r = await list(q.testKey, `?${query}`);
    expectError(r, 400, 'invalid_request');
    expect(r.body.errors[0]).toEqual({ field: query.split('=')[0], message: expect.any(String) });
  });
});

describe('GET /api/v1/requests: every state filter reads the shown state (lapsed reads as expired, issue 14)', () => {
  let q: TestPartner;
  let a: string;
  let full: any[];
  // Stored (status, proof_status, deadlines) → shown status: each lapsing pair on both sides of its deadline.
  const states: Array<[string, string, string, string]> = [
    ['requested', 'none', `now() + interval '1 hour'`, 'requested'],
    ['requested', 'none', `now() - interval '1 minute'`, 'expired'],
    ['opened', 'none', `now() + interval '1 hour'`, 'opened'],
    ['opened', 'none', `now() - interval '1 minute'`, 'expired'],
    ['requested', 'attached', `now() - interval '1 minute'`, 'requested'], // claim window still open
    ['opened', 'attached', `now() - interval '2 hours'`, 'expired'], // claim window closed
    ['opened', 'verified', `now() - interval '2 hours'`, 'opened'], // money arrived: never lapses
    ['expired', 'none', `now() - interval '2 hours'`, 'expired'],
    ['expired', 'attached', `now() - interval '2 hours'`, 'expired'],
    ['voided', 'none', `now() + interval '1 hour'`, 'voided'],
    ['requested', 'verified', `now() + interval '1 hour'`, 'requested'],
    ['requested', 'none', `now() + interval '1 hour'`, 'requested'],
  ];

  beforeAll(async () => {
    q = await createPartner(svc);
    const [ma, mb] = await Promise.all([createOnboardedMerchant(svc, q.testKey), createOnboardedMerchant(svc, q.testKey)]);
    a = ma.id;
    for (const [i, [status, proof, expiresAt]] of states.entries()) {
      const r = await mustCreateRequest(svc, q.testKey, { account_id: i % 3 === 0 ? mb.id : a, fiat_amount_int: 100 + i });
      await sql(
        `UPDATE payment_requests SET status = $2, proof_status = $3, expires_at = ${expiresAt},
           claim_until = ${expiresAt} + interval '1 hour', tx_hash = CASE WHEN $3 = 'none' THEN NULL ELSE $4 END WHERE id = $1`,
        [r.request_id, status, proof, `0x${(i + 1).toString(16).padStart(64, '0')}`],
      );
    }
    full = (await list(q.testKey, '?limit=100')).body.requests;
  });

  it('shows each stored state as the table says', () => {
    expect(full.map((x) => x.status)).toEqual(states.map((s) => s[3]));
    expect(full.map((x) => x.proof_status)).toEqual(states.map((s) => s[1]));
  });

  const statuses = [undefined, 'requested', 'opened', 'expired', 'voided'];
  const proofs = [undefined, 'none', 'attached', 'verified'];
  const combos = statuses.flatMap((st) => proofs.flatMap((pr) => [false, true].map((acc) => [st, pr, acc] as const)));

  it.each(combos)('status=%s proof_status=%s account=%s: the unfiltered list filtered by its shown state', async (st, pr, acc) => {
    const qs = new URLSearchParams({ limit: '100' });
    if (st) qs.set('status', st);
    if (pr) qs.set('proof_status', pr);
    if (acc) qs.set('account_id', a);
    const r = await list(q.testKey, `?${qs}`);
    expect(r.status).toBe(200);
    const expected = full.filter((x) => (!st || x.status === st) && (!pr || x.proof_status === pr) && (!acc || x.account_id === a));
    expect(r.body.requests).toEqual(expected);
  });

  it('pages a merged filter with offset and has_more, and by since, without gaps or repeats', async () => {
    const expired = full.filter((x) => x.status === 'expired').map((x) => x.request_id);
    expect(expired.length).toBe(5);
    const pages: string[] = [];
    for (let offset = 0; ; offset += 2) {
      const r = await list(q.testKey, `?status=expired&limit=2&offset=${offset}`);
      pages.push(...r.body.requests.map((x: any) => x.request_id));
      expect(r.body.has_more).toBe(offset + 2 < expired.length);
      if (!r.body.has_more) break;
    }
    expect(pages).toEqual(expired);
    const since = full.find((x) => x.request_id === expired[3]).created_at;
    const later = await list(q.testKey, `?status=expired&since=${encodeURIComponent(since)}`);
    expect(later.body.requests.map((x: any) => x.request_id)).toEqual(expired.slice(3));
  });

  it('status=expired shows a lapsed request in its own partner and mode only', async () => {
    // The lapsed rows are looked up by partner alone (not by mode, see stateBranches): the other mode's and
    // another partner's lapsed requests, one of each lapsing proof state, must still stay out.
    const ownLive = await mustCreateRequest(svc, q.liveKey, { account_id: (await createOnboardedMerchant(svc, q.liveKey)).id, fiat_amount_int: 700 });
    const stranger = await createPartner(svc);
    const strangers = await mustCreateRequest(svc, stranger.testKey, {
      account_id: (await createOnboardedMerchant(svc, stranger.testKey)).id,
      fiat_amount_int: 700,
    });
    await sql(
      `UPDATE payment_requests SET status = 'opened', proof_status = 'attached', tx_hash = $2,
         expires_at = now() - interval '2 hours', claim_until = now() - interval '1 hour' WHERE id = $1`,
      [ownLive.request_id, `0x${'cd'.repeat(32)}`],
    );
    await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 minute' WHERE id = $1`, [strangers.request_id]);
    const ids = (r: Reply) => r.body.requests.map((x: any) => x.request_id);
    expect((await list(q.testKey, '?status=expired&limit=100')).body.requests).toEqual(full.filter((x) => x.status === 'expired'));
    expect(ids(await list(q.liveKey, '?status=expired'))).toEqual([ownLive.request_id]);
    expect(ids(await list(stranger.testKey, '?status=expired'))).toEqual([strangers.request_id]);
    expect(ids(await list(stranger.testKey, '?status=requested'))).toEqual([]);
  });
});

describe('POST /api/v1/requests/:id/cancel', () => {
  it('requested → 200 with the request, status voided; get agrees', async () => {
    const key = await freshKey();
    const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9100 });
    const c = await cancel(key, r0.request_id);
    expect(c.status).toBe(200);
    expect(keysOf(c.body)).toEqual(REQUEST_FIELDS);
    expect(c.body).toEqual({ ...r0, status: 'voided' });
    expect((await getReq(key, r0.request_id)).body).toEqual(c.body);
  });

  it('a second cancel → 409 cannot_cancel with the request fields beside ok:false and error', async () => {
    const key = await freshKey();
    const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9101 });
    const first = await cancel(key, r0.request_id);
    const second = await cancel(key, r0.request_id);
    expect(second.status).toBe(409);
    expect(keysOf(second.body)).toEqual([...REQUEST_FIELDS, 'error'].sort());
    expect(second.body).toEqual({ ...first.body, ok: false, error: 'cannot_cancel' });
  });

  it('parallel cancels: exactly one wins', async () => {
    const key = await freshKey();
    const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9102 });
    const replies = await Promise.all(Array.from({ length: 8 }, () => cancel(key, r0.request_id)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, ...Array(7).fill(409)]);
  });

  it('another partner, the other mode, a missing or malformed id → the same 404', async () => {
    const key = await freshKey();
    const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9103 });
    const missing = await cancel(key, randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ ok: false, error: 'not_found' });
    for (const [label, k, id] of [['another partner', other.testKey, r0.request_id], ['other mode', p.liveKey, r0.request_id], ['malformed', key, 'x']]) {
      const r = await cancel(k, id);
      expect({ label, status: r.status, text: r.text }).toEqual({ label, status: 404, text: missing.text });
    }
    // None of those touched it.
    expect((await getReq(key, r0.request_id)).body.status).toBe('requested');
  });

  it.each([
    ['opened', `status = 'opened'`, { status: 'opened' }],
    ['proof attached', `proof_status = 'attached', tx_hash = '0x${'cd'.repeat(32)}'`, { proof_status: 'attached', tx_hash: `0x${'cd'.repeat(32)}` }],
    ['proof verified', `proof_status = 'verified', tx_hash = '0x${'ef'.repeat(32)}', proof_verified_at = now()`, { proof_status: 'verified' }],
    ['past its expiry', `expires_at = now() - interval '1 second'`, { status: 'expired' }],
  ])('%s → 409 cannot_cancel with the current request, nothing changes', async (_label, set, shown) => {
    const key = await freshKey();
    const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9200 });
    await sql(`UPDATE payment_requests SET ${set} WHERE id = $1`, [r0.request_id]);
    const current = (await getReq(key, r0.request_id)).body;
    expect(current).toMatchObject(shown);
    const c = await cancel(key, r0.request_id);
    expect(c.status).toBe(409);
    expect(c.body).toEqual({ ...current, ok: false, error: 'cannot_cancel' });
    expect((await getReq(key, r0.request_id)).body).toEqual(current);
  });

  (payOpenRouteExists() ? it : it.todo)(
    'after the pay page reports an open (POST /pay/api/<id>/open) → 409 cannot_cancel',
    async () => {
      const key = await freshKey();
      const r0 = await mustCreateRequest(svc, key, { account_id: m.usd, fiat_amount_int: 9300 });
      const opened = await call(svc.publicUrl, 'POST', `/pay/api/${r0.request_id}/open`);
      expect(opened.status).toBe(200);
      expect((await getReq(key, r0.request_id)).body.status).toBe('opened');
      const c = await cancel(key, r0.request_id);
      expect(c.status).toBe(409);
      expect(c.body).toMatchObject({ ok: false, error: 'cannot_cancel', request_id: r0.request_id, status: 'opened' });
    },
  );
});

describe('service mode customer_name (review follow-up)', () => {
  let svc2: TestService;
  beforeAll(async () => {
    svc2 = await startService();
  });
  afterAll(async () => {
    await svc2?.close();
  });
  it.each([[null], [''], ['   ']])('service mode with customer_name %p → customer_name_required', async (name) => {
    const p = await createPartner(svc2);
    const m = await createOnboardedMerchant(svc2, p.testKey);
    const r = await call(svc2.publicUrl, 'POST', '/api/v1/requests/create', {
      key: p.testKey,
      body: { account_id: m.id, fiat_amount_int: 100, payment_mode: 'service', customer_name: name },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('customer_name_required');
  });
});
