import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createShellMerchant, randomAddress, randomWallet, postMerchant, siweProof } from '../factories/merchants';
import { admin, createKey, createOnboardedMerchant, createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { ISO_MS_RE, keysOf, MERCHANT_FIELDS, UUID_RE, withoutReplay } from '../support/shapes';

/*
 * Spec §2.2, §4.5–4.8 and DESIGN §3/§4 on merchants. Every test uses its own partner (and, where it makes
 * many calls, its own keys) so the per-key rate limits of spec §8 never interfere.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const ONBOARDING_URL_RE = /^http:\/\/localhost:3999\/onboarding\/[A-Za-z0-9_-]+$/;
const get = (key: string, path: string, base = svc.publicUrl) => call(base, 'GET', path, { key });

describe('POST /api/v1/merchants: create', () => {
  let p: TestPartner;
  beforeAll(async () => {
    p = await createPartner(svc);
  });

  it('201 with every field of spec §2.2 and nothing else', async () => {
    const wallet = randomAddress();
    const body = {
      email: 'shop@example.com', display_name: 'Corner Shop', business_name: 'Corner Shop Ltd', country: 'DE',
      phone: '+49 30 1234567', website: 'https://shop.example.com', instagram: '@cornershop', industry: 'retail',
      display_currency: 'EUR', account_type: 'business', wallet_address: wallet,
    };
    const r = await postMerchant(svc, p.testKey, body);
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(MERCHANT_FIELDS);
    expect(r.body).toEqual({
      ok: true,
      merchant_id: expect.stringMatching(UUID_RE),
      email: 'shop@example.com', display_name: 'Corner Shop', business_name: 'Corner Shop Ltd', country: 'DE',
      phone: '+49 30 1234567', website: 'https://shop.example.com', instagram: '@cornershop', industry: 'retail',
      account_type: 'business',
      onboarding_status: 'incomplete',
      wallet_address: wallet,
      display_currency: 'eur',
      home_portal: p.slug,
      disabled: false,
      created_at: expect.stringMatching(ISO_MS_RE),
      test_mode: true,
      onboarding_url: expect.stringMatching(ONBOARDING_URL_RE),
    });
    expect(Math.abs(Date.parse(r.body.created_at) - Date.now())).toBeLessThan(60000);
  });

  it('an empty body makes a shell merchant with the defaults', async () => {
    const r = await postMerchant(svc, p.testKey, {});
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(MERCHANT_FIELDS);
    expect(r.body).toMatchObject({
      email: null, display_name: null, business_name: null, country: null, phone: null, website: null,
      instagram: null, industry: null, wallet_address: null,
      account_type: 'consumer',
      onboarding_status: 'incomplete',
      display_currency: 'usd', // the partner's default currency
      home_portal: p.slug,
      disabled: false,
      test_mode: true,
    });
    expect(r.body.onboarding_url).toMatch(ONBOARDING_URL_RE);
  });

  it('a create without a body at all works like {}', async () => {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey });
    expect(r.status).toBe(201);
    expect(r.body.onboarding_status).toBe('incomplete');
  });

  it('test_mode follows the key: a live key makes a live merchant', async () => {
    const r = await postMerchant(svc, p.liveKey, { display_name: 'Live shop' });
    expect(r.status).toBe(201);
    expect(r.body.test_mode).toBe(false);
    expect(r.body.home_portal).toBe(p.slug);
  });

  it('display_currency defaults to the partner default currency, and is shown lower case', async () => {
    const jp = await createPartner(svc, { default_currency: 'JPY' });
    expect((await postMerchant(svc, jp.testKey, {})).body.display_currency).toBe('jpy');
    expect((await postMerchant(svc, jp.testKey, { display_currency: 'Inr' })).body.display_currency).toBe('inr');
  });

  it('each merchant gets its own onboarding url', async () => {
    const a = await postMerchant(svc, p.testKey, {});
    const b = await postMerchant(svc, p.testKey, {});
    expect(a.body.merchant_id).not.toBe(b.body.merchant_id);
    expect(a.body.onboarding_url).not.toBe(b.body.onboarding_url);
  });
});

describe('POST /api/v1/merchants: validation (spec §4.5, DESIGN §3)', () => {
  let key: string;
  let p: TestPartner;
  let calls = 0;
  beforeAll(async () => {
    p = await createPartner(svc);
  });
  // A new key every 25 calls keeps these many calls under the limit of 30 per minute per key.
  async function post(body: unknown) {
    if (calls++ % 25 === 0) key = await createKey(svc, p.id, { mode: 'test' });
    return postMerchant(svc, key, body);
  }

  const local64 = 'a'.repeat(64);
  const email254 = `${local64}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(57)}.com`;
  const email255 = `${local64}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(58)}.com`;

  it.each([
    ['email', 'shop@example.com'],
    ['email', email254],
    ['display_name', 'x'.repeat(120)],
    ['business_name', 'x'.repeat(120)],
    ['country', 'US'],
    ['phone', '1'.repeat(32)],
    ['website', 'w'.repeat(200)],
    ['instagram', 'i'.repeat(200)],
    ['industry', 'x'.repeat(80)],
    ['display_currency', 'usd'],
    ['display_currency', 'KWD'],
    ['account_type', 'consumer'],
    ['account_type', 'business'],
    ['display_name', ''],
  ])('accepts %s = %p', async (field, value) => {
    const r = await post({ [field]: value });
    expect(r.status).toBe(201);
    expect(r.body[field]).toBe(field === 'display_currency' ? (value as string).toLowerCase() : value);
  });

  it.each([
    ['email', 'not-an-email'],
    ['email', 'a@b'],
    ['email', '@example.com'],
    ['email', email255],
    ['email', 42],
    // Mail addresses a merchant's notes could not be sent to as one recipient (the sender refuses them).
    ['email', '"owner.x"@example.com'],
    ['email', 'a@example.com, b@example.com'],
    ['email', 'a@example.com\r\nBcc: c@example.com'],
    ['display_name', 'x'.repeat(121)],
    ['display_name', 12],
    ['business_name', 'x'.repeat(121)],
    ['country', 'us'],
    ['country', 'USA'],
    ['country', 'U1'],
    ['country', ''],
    ['phone', '1'.repeat(33)],
    ['phone', 4930123],
    ['website', 'w'.repeat(201)],
    ['instagram', 'i'.repeat(201)],
    ['industry', 'x'.repeat(81)],
    ['account_type', 'admin'],
    ['account_type', 'Business'],
    ['wallet_address', '0x1234'],
    ['wallet_address', 'a'.repeat(40)],
    ['wallet_address', `0x${'a'.repeat(41)}`],
    ['wallet_address', `0x${'g'.repeat(40)}`],
    ['wallet_address', `0X${'a'.repeat(40)}`],
    ['wallet_address', ` 0x${'a'.repeat(40)}`],
    ['wallet_address', 1234],
    ['display_currency', 'dollars'],
    ['display_currency', 'us'],
    ['display_currency', 840],
  ])('rejects %s = %p with 400 invalid_request naming the field', async (field, value) => {
    const r = await post({ [field]: value });
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  });

  it.each([
    ['not an ISO 4217 code', 'xyz'],
    ['an ISO 4217 code without a configured rate', 'gbp'],
  ])('display_currency %s → 400 invalid_request naming display_currency', async (_label, code) => {
    const r = await post({ display_currency: code });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'invalid_request', errors: [{ field: 'display_currency', message: expect.any(String) }] });
  });

  it('null for an optional field counts as not given', async () => {
    const r = await post({ email: null, account_type: null, display_currency: null, wallet_address: null });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ email: null, account_type: 'consumer', display_currency: 'usd', wallet_address: null });
  });

  it('an unknown field → 400 invalid_request with errors [{field, message}]', async () => {
    const r = await post({ display_name: 'ok', favourite_colour: 'blue' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'invalid_request', errors: [{ field: 'favourite_colour', message: expect.any(String) }] });
  });

  it('fields the service owns cannot be set through the API', async () => {
    const owned = { onboarding_status: 'complete', test_mode: false, disabled: true, merchant_id: 'x', home_portal: 'x', onboarding_url: 'x' };
    for (const [field, value] of Object.entries(owned)) {
      const r = await post({ [field]: value });
      expect({ field, status: r.status, error: r.body.error }).toEqual({ field, status: 400, error: 'invalid_request' });
    }
  });

  it('several bad fields are all listed', async () => {
    const r = await post({ email: 'nope', country: 'usa', industry: 'x'.repeat(81) });
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: any) => e.field).sort()).toEqual(['country', 'email', 'industry']);
  });

  it('a rejected create makes no merchant', async () => {
    const before = await get(key, '/api/v1/merchants?limit=100');
    await post({ email: 'nope', display_name: 'should-not-exist' });
    const after = await get(key, '/api/v1/merchants?limit=100');
    expect(after.body.merchants.length).toBe(before.body.merchants.length);
    expect(after.body.merchants.some((m: any) => m.display_name === 'should-not-exist')).toBe(false);
  });
});

describe('wallet idempotency (spec §4.5 rules 1–3)', () => {
  it('same partner and mode: 200 replay of the same merchant, unchanged', async () => {
    const p = await createPartner(svc);
    const wallet = randomAddress();
    const first = await postMerchant(svc, p.testKey, { wallet_address: wallet, display_name: 'First' });
    expect(first.status).toBe(201);
    expect(first.body.idempotent_replay).toBeUndefined();
    const again = await postMerchant(svc, p.testKey, { wallet_address: wallet, display_name: 'Second', country: 'FR' });
    expect(again.status).toBe(200);
    expect(again.body.idempotent_replay).toBe(true);
    expect(keysOf(again.body)).toEqual([...MERCHANT_FIELDS, 'idempotent_replay'].sort());
    expect(withoutReplay(again.body)).toEqual(first.body);
    // Nothing was changed by the replay.
    expect((await get(p.testKey, `/api/v1/merchants/${first.body.merchant_id}`)).body).toEqual(first.body);
  });

  it('the wallet is stored lower-cased and mixed-case forms replay', async () => {
    const p = await createPartner(svc);
    const hex = randomAddress().slice(2);
    const mixed = `0x${[...hex].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')}`;
    const first = await postMerchant(svc, p.testKey, { wallet_address: `0x${hex.toUpperCase()}` });
    expect(first.status).toBe(201);
    expect(first.body.wallet_address).toBe(`0x${hex}`);
    for (const form of [`0x${hex}`, mixed]) {
      const r = await postMerchant(svc, p.testKey, { wallet_address: form });
      expect({ form, status: r.status, id: r.body.merchant_id, replay: r.body.idempotent_replay }).toEqual({
        form, status: 200, id: first.body.merchant_id, replay: true,
      });
    }
  });

  it('another partner with the same wallet → 409 wallet_address_conflict, revealing nothing', async () => {
    const a = await createPartner(svc);
    const b = await createPartner(svc);
    const wallet = randomAddress();
    expect((await postMerchant(svc, a.testKey, { wallet_address: wallet })).status).toBe(201);
    const r = await postMerchant(svc, b.testKey, { wallet_address: wallet.toUpperCase().replace('0X', '0x') });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ ok: false, error: 'wallet_address_conflict' });
  });

  it('the same partner in the other mode → 409 wallet_address_conflict (both directions)', async () => {
    const p = await createPartner(svc);
    const w1 = randomAddress();
    const w2 = randomAddress();
    expect((await postMerchant(svc, p.testKey, { wallet_address: w1 })).status).toBe(201);
    expect((await postMerchant(svc, p.liveKey, { wallet_address: w1 })).body).toEqual({ ok: false, error: 'wallet_address_conflict' });
    expect((await postMerchant(svc, p.liveKey, { wallet_address: w2 })).status).toBe(201);
    const r = await postMerchant(svc, p.testKey, { wallet_address: w2 });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ ok: false, error: 'wallet_address_conflict' });
  });

  it('without a wallet there is no replay protection', async () => {
    const p = await createPartner(svc);
    const a = await postMerchant(svc, p.testKey, { email: 'same@example.com' });
    const b = await postMerchant(svc, p.testKey, { email: 'same@example.com' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.merchant_id).not.toBe(b.body.merchant_id);
  });

  it('an invalid body is refused even when its wallet would replay', async () => {
    // An invalid body is an invalid body, replay or not (DESIGN §3 order: validation first).
    const p = await createPartner(svc);
    const wallet = randomAddress();
    expect((await postMerchant(svc, p.testKey, { wallet_address: wallet })).status).toBe(201);
    const r = await postMerchant(svc, p.testKey, { wallet_address: wallet, country: 'usa' });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('20 parallel creates with one wallet: exactly one 201, the rest 200 replays of the same merchant', async () => {
    const p = await createPartner(svc);
    // Two keys, so the 20 calls stay far from the limit of 30 per minute per key.
    const keys = [p.testKey, await createKey(svc, p.id, { mode: 'test' })];
    const wallet = randomAddress();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => postMerchant(svc, keys[i % 2], { wallet_address: wallet, display_name: `try ${i}` })),
    );
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(19).fill(200), 201]);
    const ids = new Set(replies.map((r) => r.body.merchant_id));
    expect(ids.size).toBe(1);
    for (const r of replies) expect(r.body.idempotent_replay).toBe(r.status === 200 ? true : undefined);
    const list = await get(p.testKey, '/api/v1/merchants?limit=100');
    expect(list.body.merchants.filter((m: any) => m.wallet_address === wallet)).toHaveLength(1);
  });
});

describe('GET /api/v1/merchants/:id', () => {
  let p: TestPartner;
  let other: TestPartner;
  let merchant: any;
  beforeAll(async () => {
    p = await createPartner(svc);
    other = await createPartner(svc);
    merchant = (await postMerchant(svc, p.testKey, { display_name: 'Mine', wallet_address: randomAddress() })).body;
  });

  it('200 with the merchant object, equal to what create returned', async () => {
    const r = await get(p.testKey, `/api/v1/merchants/${merchant.merchant_id}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(merchant);
  });

  it('another partner, the other mode, a random id and a malformed id: byte-identical 404s', async () => {
    const missing = await get(p.testKey, `/api/v1/merchants/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ ok: false, error: 'not_found' });
    const cases = [
      ['another partner', other.testKey, merchant.merchant_id],
      ['another partner, live key', other.liveKey, merchant.merchant_id],
      ['the other mode', p.liveKey, merchant.merchant_id],
      ['malformed id', p.testKey, 'not-a-uuid'],
      ['upper-case id of a missing uuid', p.testKey, randomUUID().toUpperCase()],
      ['id with sql', p.testKey, "1' OR '1'='1"],
    ];
    for (const [label, key, id] of cases) {
      const r = await get(key, `/api/v1/merchants/${encodeURIComponent(id)}`);
      expect({ label, status: r.status, text: r.text }).toEqual({ label, status: 404, text: missing.text });
    }
  });

  it('the id is matched whatever its case', async () => {
    const r = await get(p.testKey, `/api/v1/merchants/${merchant.merchant_id.toUpperCase()}`);
    expect(r.status).toBe(200);
    expect(r.body.merchant_id).toBe(merchant.merchant_id);
  });
});

describe('GET /api/v1/merchants: list', () => {
  let p: TestPartner;
  let shells: any[];
  let complete: { id: string };
  let disabledOne: any;
  beforeAll(async () => {
    p = await createPartner(svc);
    shells = [];
    for (let i = 0; i < 4; i++) shells.push((await postMerchant(svc, p.testKey, { display_name: `shell ${i}` })).body);
    complete = await createOnboardedMerchant(svc, p.testKey);
    disabledOne = shells[1];
    expect((await admin(svc, 'POST', `/merchants/${disabledOne.merchant_id}/disable`)).status).toBe(200);
    // Noise that must never show: a live merchant of the same partner and a merchant of another partner.
    await postMerchant(svc, p.liveKey, { display_name: 'live one' });
    const other = await createPartner(svc);
    await postMerchant(svc, other.testKey, { display_name: 'foreign' });
  });

  const ids = (r: any) => r.body.merchants.map((m: any) => m.merchant_id);

  it('lists this partner\'s merchants of this mode, oldest first, with the documented envelope', async () => {
    const r = await get(p.testKey, '/api/v1/merchants');
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(['has_more', 'limit', 'merchants', 'offset', 'ok']);
    expect(r.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    expect(ids(r)).toEqual([...shells.map((m) => m.merchant_id), complete.id]);
    for (const m of r.body.merchants) expect(keysOf(m)).toEqual(MERCHANT_FIELDS);
    const created = r.body.merchants.map((m: any) => m.created_at);
    expect([...created].sort()).toEqual(created);
  });

  it('live key sees only the live merchant', async () => {
    const r = await get(p.liveKey, '/api/v1/merchants');
    expect(r.body.merchants.map((m: any) => m.display_name)).toEqual(['live one']);
    expect(r.body.merchants[0].test_mode).toBe(false);
  });

  it('filters by onboarding_status', async () => {
    expect(ids(await get(p.testKey, '/api/v1/merchants?onboarding_status=complete'))).toEqual([complete.id]);
    expect(ids(await get(p.testKey, '/api/v1/merchants?onboarding_status=incomplete'))).toEqual(shells.map((m) => m.merchant_id));
    const c = await get(p.testKey, '/api/v1/merchants?onboarding_status=complete');
    expect(c.body.merchants[0].onboarding_url).toBeNull();
  });

  it('filters by disabled', async () => {
    expect(ids(await get(p.testKey, '/api/v1/merchants?disabled=true'))).toEqual([disabledOne.merchant_id]);
    const enabled = ids(await get(p.testKey, '/api/v1/merchants?disabled=false'));
    expect(enabled).toHaveLength(4);
    expect(enabled).not.toContain(disabledOne.merchant_id);
    expect(ids(await get(p.testKey, '/api/v1/merchants?disabled=true&onboarding_status=complete'))).toEqual([]);
  });

  it('pages with limit, offset and has_more', async () => {
    const all = ids(await get(p.testKey, '/api/v1/merchants'));
    const p1 = await get(p.testKey, '/api/v1/merchants?limit=2');
    expect(p1.body).toMatchObject({ limit: 2, offset: 0, has_more: true });
    const p2 = await get(p.testKey, '/api/v1/merchants?limit=2&offset=2');
    expect(p2.body).toMatchObject({ limit: 2, offset: 2, has_more: true });
    const p3 = await get(p.testKey, '/api/v1/merchants?limit=2&offset=4');
    expect(p3.body).toMatchObject({ limit: 2, offset: 4, has_more: false });
    expect([...ids(p1), ...ids(p2), ...ids(p3)]).toEqual(all);
    // Exactly the rest on the last page: has_more is false.
    expect((await get(p.testKey, '/api/v1/merchants?limit=5')).body.has_more).toBe(false);
    expect((await get(p.testKey, '/api/v1/merchants?limit=4')).body.has_more).toBe(true);
    expect((await get(p.testKey, '/api/v1/merchants?limit=100&offset=1000')).body).toMatchObject({ merchants: [], has_more: false });
    expect((await get(p.testKey, '/api/v1/merchants?limit=100')).body.limit).toBe(100);
  });

  it.each([
    'limit=101', 'limit=0', 'limit=-1', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=x', 'disabled=maybe', 'disabled=1',
    'onboarding_status=done', 'onboarding_status=COMPLETE', 'limit=1e1', 'limit=0x10', 'limit=%205', 'offset=', 'limit=',
  ])('%s → 400 invalid_request', async (q) => {
    const r = await get(p.testKey, `/api/v1/merchants?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.errors[0]).toEqual({ field: q.split('=')[0], message: expect.any(String) });
  });
});

describe('the /api/v1/accounts alias (spec §4.8)', () => {
  it('create, get and list behave exactly as the merchants paths', async () => {
    const p = await createPartner(svc);
    const wallet = randomAddress();
    const created = await postMerchant(svc, p.testKey, { display_name: 'Via accounts', wallet_address: wallet }, '/api/v1/accounts');
    expect(created.status).toBe(201);
    expect(keysOf(created.body)).toEqual(MERCHANT_FIELDS);
    // Replay across the two names.
    const replay = await postMerchant(svc, p.testKey, { wallet_address: wallet }, '/api/v1/merchants');
    expect(replay.status).toBe(200);
    expect(withoutReplay(replay.body)).toEqual(created.body);
    const replay2 = await postMerchant(svc, p.testKey, { wallet_address: wallet }, '/api/v1/accounts');
    expect(replay2.text).toBe(replay.text);

    const id = created.body.merchant_id;
    const viaAccounts = await get(p.testKey, `/api/v1/accounts/${id}`);
    const viaMerchants = await get(p.testKey, `/api/v1/merchants/${id}`);
    expect(viaAccounts.status).toBe(200);
    expect(viaAccounts.text).toBe(viaMerchants.text);

    for (const q of ['', '?limit=1', '?onboarding_status=incomplete', '?limit=101']) {
      const a = await get(p.testKey, `/api/v1/accounts${q}`);
      const m = await get(p.testKey, `/api/v1/merchants${q}`);
      expect({ q, status: a.status, text: a.text }).toEqual({ q, status: m.status, text: m.text });
    }
    const missingA = await get(p.testKey, `/api/v1/accounts/${randomUUID()}`);
    const missingM = await get(p.testKey, `/api/v1/merchants/${randomUUID()}`);
    expect([missingA.status, missingA.text]).toEqual([404, missingM.text]);
    const bad = await postMerchant(svc, p.testKey, { nope: 1 }, '/api/v1/accounts');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
  });
});

describe('admin disable / enable (DESIGN §4)', () => {
  it('returns the merchant object with the flag, and the partner sees it', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const off = await admin(svc, 'POST', `/merchants/${m.id}/disable`);
    expect(off.status).toBe(200);
    expect(keysOf(off.body)).toEqual(MERCHANT_FIELDS);
    expect(off.body).toMatchObject({ ok: true, merchant_id: m.id, disabled: true, onboarding_status: 'complete', home_portal: p.slug });
    expect((await get(p.testKey, `/api/v1/merchants/${m.id}`)).body).toEqual(off.body);
    // Disabling twice is harmless.
    expect((await admin(svc, 'POST', `/merchants/${m.id}/disable`)).body.disabled).toBe(true);
    const on = await admin(svc, 'POST', `/merchants/${m.id}/enable`);
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ ...off.body, disabled: false });
    expect((await get(p.testKey, `/api/v1/merchants/${m.id}`)).body.disabled).toBe(false);
  });

  it('an unknown or malformed merchant id → 404', async () => {
    for (const id of [randomUUID(), 'nope']) {
      const r = await admin(svc, 'POST', `/merchants/${id}/disable`);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }
  });
});

describe('admin release-wallet: a wallet a merchant named at create but never proved', () => {
  const released = (id: string) => sql(`SELECT actor_kind, partner_id, details FROM audit_events WHERE action = 'merchant.wallet_released' AND target_id = $1`, [id]);

  it("frees it for its owner: the named merchant reads null, another partner's merchant onboards it, audited", async () => {
    const owner = randomWallet();
    const namer = await createPartner(svc);
    const claim = await createShellMerchant(svc, namer.liveKey, { wallet_address: owner.address });
    const p = await createPartner(svc);
    expect((await postMerchant(svc, p.liveKey, { wallet_address: owner.address })).status).toBe(409);

    const r = await admin(svc, 'POST', `/merchants/${claim.merchant_id}/release-wallet`);
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(MERCHANT_FIELDS);
    expect(r.body).toMatchObject({ ok: true, merchant_id: claim.merchant_id, wallet_address: null, onboarding_status: 'incomplete' });
    expect((await get(namer.liveKey, `/api/v1/merchants/${claim.merchant_id}`)).body.wallet_address).toBeNull();
    expect(await released(claim.merchant_id)).toEqual([
      { actor_kind: 'admin', partner_id: namer.id, details: { test_mode: false, wallet_address: owner.address.toLowerCase() } },
    ]);

    const mine = await createShellMerchant(svc, p.liveKey, {});
    const token = tokenOf(mine.onboarding_url);
    const proved = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, owner) });
    expect(proved.status).toBe(200);
    expect(proved.body.wallet_address).toBe(owner.address.toLowerCase());
    // Released once: there is nothing left to release.
    const again = await admin(svc, 'POST', `/merchants/${claim.merchant_id}/release-wallet`);
    expect(again.status).toBe(409);
    expect(again.body.errors).toEqual([{ field: 'merchant_id', message: 'the merchant names no wallet' }]);
    expect(await released(claim.merchant_id)).toHaveLength(1);
  });

  it('a proven wallet stays its merchant\'s (409); unknown or malformed id 404; no token 401; nothing changes', async () => {
    const p = await createPartner(svc);
    const proven = await createOnboardedMerchant(svc, p.testKey);
    const named = await createShellMerchant(svc, p.testKey, { wallet_address: randomWallet().address });
    // Proven but onboarding not complete yet: the wallet is still the merchant's own.
    const w = randomWallet();
    const half = await createShellMerchant(svc, p.testKey, { wallet_address: w.address });
    const halfToken = tokenOf(half.onboarding_url);
    expect((await call(svc.publicUrl, 'POST', `/onboarding/api/${halfToken}/wallet`, { body: await siweProof(svc, halfToken, w) })).status).toBe(200);
    for (const id of [proven.id, half.merchant_id]) {
      const before = (await get(p.testKey, `/api/v1/merchants/${id}`)).body;
      const r = await admin(svc, 'POST', `/merchants/${id}/release-wallet`);
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ ok: false, error: 'conflict', errors: [{ field: 'merchant_id', message: 'the merchant proved this wallet: it is theirs' }] });
      expect((await get(p.testKey, `/api/v1/merchants/${id}`)).body).toEqual(before);
      expect(await released(id)).toEqual([]);
    }
    for (const id of [randomUUID(), 'nope']) {
      expect(await admin(svc, 'POST', `/merchants/${id}/release-wallet`)).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } });
    }
    // A named wallet, but a call without the admin token (or on the public listener) releases nothing.
    const before = (await get(p.testKey, `/api/v1/merchants/${named.merchant_id}`)).body;
    expect((await call(svc.adminUrl, 'POST', `/admin/api/merchants/${named.merchant_id}/release-wallet`)).status).toBe(401);
    expect((await call(svc.publicUrl, 'POST', `/admin/api/merchants/${named.merchant_id}/release-wallet`, { key: ADMIN_TOKEN })).status).toBe(404);
    expect((await get(p.testKey, `/api/v1/merchants/${named.merchant_id}`)).body).toEqual(before);
    expect(await released(named.merchant_id)).toEqual([]);
  });
});

describe('a merchant disable racing a create (a helper\'s hunt)', () => {
  it('the disable waits for a create that already read the merchant as enabled: the request exists before the disable answers, and nothing is created after', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const first = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 100 } });
    expect(first.status).toBe(201);
    const key = randomBytes(16).toString('hex');
    // Another create with the same idempotency key, in flight (it rolls back): the create below reads the
    // merchant, then waits on that row (ON CONFLICT) before its own row lands.
    const holder = new Client({ connectionString: testEnv().databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO payment_requests
           SELECT (jsonb_populate_record(NULL::payment_requests, to_jsonb(r) ||
                   jsonb_build_object('id', gen_random_uuid(), 'idempotency_key', $2::text, 'amount_locked', false))).*
             FROM payment_requests r WHERE id = $1`,
        [first.body.request_id, key],
      );
      const waiting = async (text: string) => (await sql(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, [`%${text}%`])).length > 0;
      let createdAt = 0;
      let disabledAt = 0;
      const create = call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
        key: p.testKey, body: { account_id: m.id, fiat_amount_int: 777, idempotency_key: key },
      }).then((r) => ((createdAt = Date.now()), r));
      await waitFor(() => waiting('INSERT INTO payment_requests'), 10000, 20);
      const disable = admin(svc, 'POST', `/merchants/${m.id}/disable`).then((r) => ((disabledAt = Date.now()), r));
      await waitFor(() => waiting('pg_advisory_xact_lock'), 10000, 20);
      await holder.query('ROLLBACK');
      const [c, d] = await Promise.all([create, disable]);
      expect(c.status).toBe(201);
      expect(d.status).toBe(200);
      expect(d.body.disabled).toBe(true);
      expect(createdAt).toBeLessThanOrEqual(disabledAt);
      const after = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 778 } });
      expect(after.status).toBe(400);
      expect(after.body.error).toBe('merchant_disabled');
    } finally {
      await holder.end();
    }
  });

  it('an insert that comes while the disable waits for one in flight queues behind the disable and is refused: a flow of creates cannot hold a disable off', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const first = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 100 } });
    expect(first.status).toBe(201);
    // Two inserts of the merchant's requests as the create path sends them (the schema's rule runs on each).
    const insert = (c: Client) => c.query(
      `INSERT INTO payment_requests
         SELECT (jsonb_populate_record(NULL::payment_requests, to_jsonb(r) ||
                 jsonb_build_object('id', gen_random_uuid(), 'idempotency_key', $2::text, 'amount', r.amount + 1 + $3::int, 'amount_locked', false))).*
           FROM payment_requests r WHERE id = $1`,
      [first.body.request_id, randomBytes(16).toString('hex'), Math.floor(Math.random() * 1e6)],
    );
    const waiters = async () => (await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n;
    const [a, b] = [new Client({ connectionString: testEnv().databaseUrl }), new Client({ connectionString: testEnv().databaseUrl })];
    await Promise.all([a.connect(), b.connect()]);
    try {
      await a.query('BEGIN');
      await insert(a); // in flight
      const disable = admin(svc, 'POST', `/merchants/${m.id}/disable`);
      await waitFor(async () => (await waiters()) >= 1, 10000, 20);
      // Another insert now: it must wait behind the disable, not pass it while the first is still open.
      await b.query('BEGIN');
      const late = insert(b).then(() => 'inserted', (e: Error) => e.message);
      await waitFor(async () => (await waiters()) >= 2, 10000, 20);
      await a.query('COMMIT');
      expect((await disable).status).toBe(200);
      expect(await late).toMatch(/does not accept this request as priced/);
      await b.query('ROLLBACK');
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });
});
