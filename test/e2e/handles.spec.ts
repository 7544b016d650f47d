import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { freshMinute } from '../support/clock';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { UUID_RE } from '../support/shapes';

/*
 * DESIGN §5 handles and "Public handle page", §8: a merchant claims a handle in its dashboard; anyone pays it
 * any amount through /m/api/<handle>. Handles are never reissued to another merchant.
 */
let svc: TestService;
let p: TestPartner;
beforeAll(async () => {
  // Many merchants are created here: more than the 30 a minute one key may create (spec §8).
  svc = await startService({ env: { RATE_LIMIT_SCALE: '10' } });
  p = await createPartner(svc, { allowed_expiry_minutes: [30, 60, 1440], default_expiry_minutes: 30 });
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

let n = 0;
/** A handle no other test (or earlier run on this database) has used. */
const fresh = (prefix = 'shop') => `${prefix}-${Date.now().toString(36)}${(n++).toString(36)}`.slice(0, 20);
const merchant = async (body: Record<string, unknown> = {}) => {
  const m = await createOnboardedMerchant(svc, p.testKey, { display_name: 'Corner Café', ...body });
  return { ...m, dash: await signInDashboard(svc, m.wallet) };
};
const claim = (c: DashboardClient, handle: unknown) => c.call('PUT', '/handle', { body: { handle } });
const view = (handle: string) => call(svc.publicUrl, 'GET', `/m/api/${handle}`);
const pay = (handle: string, body: unknown) => call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body });

describe('PUT /dashboard/api/handle', () => {
  it('claims a handle, lower-cased: {ok, handle, handle_url}; /me shows it', async () => {
    const m = await merchant();
    const h = fresh();
    const r = await claim(m.dash, h.toUpperCase());
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, handle: h, handle_url: `${svc.config.publicUrl}/m/${h}` });
    expect((await m.dash.call('GET', '/me')).body).toMatchObject({ handle: h, handle_url: `${svc.config.publicUrl}/m/${h}` });
    // Claiming the handle one already holds changes nothing.
    expect((await claim(m.dash, h)).body).toEqual(r.body);
  });

  it.each([
    ['too short', 'ab'],
    ['too long', 'a'.repeat(21)],
    ['starting with a digit', '1shop'],
    ['starting with a dash', '-shop'],
    ['ending with a dash', 'shop-'],
    ['with a double dash', 'my--shop'],
    ['with an underscore', 'my_shop'],
    ['with a dot', 'my.shop'],
    ['with a slash', 'my/shop'],
    ['non-ASCII', 'café'],
    // U+212A lower-cases to an ASCII "k": refused as typed, before lower-casing.
    ['with the Kelvin sign', '\u212Aelvin-shop'],
    ['reserved: admin', 'admin'],
    ['reserved: dashboard', 'Dashboard'],
    ['reserved: pay', 'pay'],
    ['reserved: www', 'www'],
    ['not a string', 1234],
    ['missing', undefined],
  ])('%s → 400 invalid_handle, nothing stored', async (_, handle) => {
    const m = await merchant();
    const r = await claim(m.dash, handle);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_handle' });
    expect(await sql(`SELECT handle FROM merchant_handles WHERE merchant_id = $1`, [m.id])).toEqual([]);
  });

  it('a handle another merchant holds is 409 handle_taken, in any case', async () => {
    const [one, two] = [await merchant(), await merchant()];
    const h = fresh();
    expect((await claim(one.dash, h)).status).toBe(200);
    const r = await claim(two.dash, h.toUpperCase());
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ ok: false, error: 'handle_taken' });
    expect((await two.dash.call('GET', '/me')).body.handle).toBeNull();
  });

  it('a live merchant takes over a handle a test merchant holds or held; never the other way, never live from live', async () => {
    // Test merchants cost nothing: one sandbox key could otherwise retire any number of names for good (an
    // abuse hunt: 20 a second), as it could hold wallets.
    const test = await merchant();
    const other = await createPartner(svc);
    const live = async () => {
      const m = await createOnboardedMerchant(svc, other.liveKey, { display_name: 'Live Bakery' });
      return { ...m, dash: await signInDashboard(svc, m.wallet) };
    };
    const [held, retired] = [fresh('held'), fresh('retired')];
    expect((await claim(test.dash, retired)).status).toBe(200);
    expect((await claim(test.dash, held)).status).toBe(200);
    const a = await live();
    const b = await live();
    expect((await claim(a.dash, retired)).body).toMatchObject({ ok: true, handle: retired });
    expect((await claim(b.dash, held)).body).toMatchObject({ ok: true, handle: held });
    expect((await view(held)).body).toMatchObject({ display_name: 'Live Bakery', test_mode: false });
    expect((await test.dash.call('GET', '/me')).body.handle).toBeNull();
    // The test merchant cannot take either back, nor a live merchant another live one's.
    expect((await claim(test.dash, held)).body).toEqual({ ok: false, error: 'handle_taken' });
    expect((await claim(a.dash, held)).body).toEqual({ ok: false, error: 'handle_taken' });
    expect(await sql(`SELECT handle, merchant_id, retired_at IS NULL AS current FROM merchant_handles WHERE handle = ANY($1::text[]) ORDER BY handle`, [[held, retired]])).toEqual(
      [
        { handle: held, merchant_id: b.id, current: true },
        { handle: retired, merchant_id: a.id, current: true },
      ].sort((x, y) => x.handle.localeCompare(y.handle)),
    );
  });

  it('changing handles retires the old one: its page answers 404, and it is never given to another merchant', async () => {
    const [one, two] = [await merchant(), await merchant()];
    const [old, next] = [fresh('old'), fresh('new')];
    await claim(one.dash, old);
    expect((await claim(one.dash, next)).body.handle).toBe(next);
    expect((await view(old)).status).toBe(404);
    expect((await pay(old, { fiat_amount_int: 100 })).status).toBe(404);
    expect((await view(next)).body.handle).toBe(next);
    expect((await claim(two.dash, old)).status).toBe(409);
    // A failed claim leaves the claimer's own handle as it was.
    const mine = fresh('mine');
    await claim(two.dash, mine);
    expect((await claim(two.dash, next)).status).toBe(409);
    expect((await two.dash.call('GET', '/me')).body.handle).toBe(mine);
    expect((await view(mine)).status).toBe(200);
  });

  it('at most 5 new handles a merchant in 24 hours: the 6th → 429 rate_limited, nothing changes; its own old ones come back', async () => {
    const m = await merchant();
    const mine = [fresh('a'), fresh('b'), fresh('c'), fresh('d'), fresh('e')];
    for (const h of mine) expect((await claim(m.dash, h)).status).toBe(200);
    const sixth = fresh('f');
    const r = await claim(m.dash, sixth);
    expect(r.status).toBe(429);
    expect(r.body).toMatchObject({ ok: false, error: 'rate_limited' });
    expect(await sql(`SELECT handle FROM merchant_handles WHERE handle = $1`, [sixth])).toEqual([]);
    expect((await m.dash.call('GET', '/me')).body.handle).toBe(mine[4]);
    // Taking back a handle of its own adds no row, so it is not a new claim.
    expect((await claim(m.dash, mine[0])).status).toBe(200);
    expect((await m.dash.call('GET', '/me')).body.handle).toBe(mine[0]);
    // The window is rolling: claims older than 24 hours no longer count.
    await sql(`UPDATE merchant_handles SET created_at = created_at - interval '25 hours' WHERE handle = $1`, [mine[1]]);
    expect((await claim(m.dash, sixth)).status).toBe(200);
  });

  it('two merchants claiming the same new handle at once: exactly one wins, the other is 409 handle_taken', async () => {
    for (let round = 0; round < 3; round++) {
      const [one, two] = [await merchant(), await merchant()];
      const h = fresh('race');
      const replies = await Promise.all([claim(one.dash, h), claim(two.dash, h)]);
      expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
      const rows = await sql(`SELECT merchant_id FROM merchant_handles WHERE handle = $1`, [h]);
      expect(rows).toHaveLength(1);
      expect(rows[0].merchant_id).toBe(replies[0].status === 200 ? one.id : two.id);
    }
  });

  it('two merchants each claiming the other\'s handle at once: both 409 handle_taken, never a 500, each keeps its own', async () => {
    // Each transaction locks the handle it wants, then retires the one it holds: the other's wanted one. Postgres
    // ended that lock cycle by rolling one back, which answered 500 (a review); the loser now runs again and
    // finds the handle taken.
    const [one, two] = [await merchant(), await merchant()];
    const [h1, h2] = [fresh('swap'), fresh('swap')];
    expect((await claim(one.dash, h1)).status).toBe(200);
    expect((await claim(two.dash, h2)).status).toBe(200);
    for (let round = 0; round < 15; round++) {
      const replies = await Promise.all([claim(one.dash, h2), claim(two.dash, h1)]);
      expect(replies.map((r) => [r.status, (r.body as { error?: string }).error])).toEqual([
        [409, 'handle_taken'],
        [409, 'handle_taken'],
      ]);
    }
    expect(await sql(`SELECT handle, merchant_id, retired_at FROM merchant_handles WHERE handle = ANY($1) ORDER BY handle`, [[h1, h2]])).toEqual([
      { handle: h1, merchant_id: one.id, retired_at: null },
      { handle: h2, merchant_id: two.id, retired_at: null },
    ]);
  });

  it('needs a session and the CSRF header', async () => {
    const m = await merchant();
    expect((await call(svc.publicUrl, 'PUT', '/dashboard/api/handle', { body: { handle: fresh() } })).status).toBe(401);
    const r = await m.dash.call('PUT', '/handle', { body: { handle: fresh() }, csrf: false });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('csrf_failed');
  });
});

describe('public handle API', () => {
  it('GET /m/api/<handle> → {ok, handle, display_name, fiat_currency, test_mode, accepting_payments}; any case', async () => {
    const m = await merchant({ display_currency: 'eur' });
    const h = fresh();
    await claim(m.dash, h);
    const r = await view(h.toUpperCase());
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, handle: h, display_name: 'Corner Café', fiat_currency: 'eur', test_mode: true, accepting_payments: true });
  });

  it('a blank name is no name: the payer sees the business name, on the handle page and the pay page', async () => {
    const m = await merchant({ business_name: 'Corner Café Ltd' });
    const h = fresh();
    await claim(m.dash, h);
    const blank = await m.dash.call('PATCH', '/me', { body: { display_name: '  ' } });
    expect(blank.status).toBe(200);
    expect(blank.body.display_name).toBeNull();
    expect((await view(h)).body.display_name).toBe('Corner Café Ltd');
    const made = await pay(h, { fiat_amount_int: 150 });
    expect(made.status).toBe(201);
    const page = await call(svc.publicUrl, 'GET', `/pay/api/${made.body.request_id}`);
    expect(page.body.merchant_name).toBe('Corner Café Ltd');
  });

  it('a partner\'s blank display name is echoed as supplied (spec §4.5), and the payer still sees the business name', async () => {
    for (const blank of ['', '   ']) {
      const m = await merchant({ display_name: blank, business_name: 'Blank Corner Ltd' });
      expect((await call(svc.publicUrl, 'GET', `/api/v1/merchants/${m.id}`, { key: p.testKey })).body.display_name).toBe(blank);
      const h = fresh();
      await claim(m.dash, h);
      expect((await view(h)).body.display_name).toBe('Blank Corner Ltd');
      const made = await pay(h, { fiat_amount_int: 151 });
      expect((await call(svc.publicUrl, 'GET', `/pay/api/${made.body.request_id}`)).body.merchant_name).toBe('Blank Corner Ltd');
    }
  });

  it('an unknown or malformed handle is 404 not_found', async () => {
    for (const h of [fresh('none'), 'x', 'admin', '%20']) {
      const r = await view(h);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }
    expect((await pay(fresh('none'), { fiat_amount_int: 100 })).status).toBe(404);
  });

  it('a look-alike that lower-cases to a held handle (the Kelvin sign for "k") finds nothing: API and page 404', async () => {
    const m = await merchant();
    const h = fresh('kiosk');
    expect((await claim(m.dash, h)).status).toBe(200);
    const lookalike = encodeURIComponent(`\u212A${h.slice(1)}`);
    expect((await view(lookalike)).body).toEqual({ ok: false, error: 'not_found' });
    expect((await pay(lookalike, { fiat_amount_int: 100 })).status).toBe(404);
    expect((await call(svc.publicUrl, 'GET', `/m/${lookalike}`)).status).toBe(404);
    expect((await call(svc.publicUrl, 'GET', `/m/${h}`)).status).toBe(200);
  });

  it('POST /m/api/<handle>/requests → 201 {ok, request_id, pay_page_url}: source handle, metadata null, pos, the partner\'s default expiry', async () => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    const r = await pay(h, { fiat_amount_int: 2500, memo: 'Thanks!', customer_email: 'payer@example.com' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ ok: true, request_id: expect.stringMatching(UUID_RE), pay_page_url: `${svc.config.payUrl}/${r.body.request_id}` });
    const [row] = await sql(
      `SELECT source, metadata, payment_mode, memo, customer_email, merchant_id, extract(epoch FROM expires_at - created_at) AS ttl FROM payment_requests WHERE id = $1`,
      [r.body.request_id],
    );
    expect(row).toMatchObject({ source: 'handle', metadata: null, payment_mode: 'pos', memo: 'Thanks!', customer_email: 'payer@example.com', merchant_id: m.id });
    expect(Number(row.ttl)).toBe(30 * 60);
    const api = await call(svc.publicUrl, 'GET', `/api/v1/requests/${r.body.request_id}`, { key: p.testKey });
    expect(api.body).toMatchObject({ metadata: null, fiat_amount: 2500, account_id: m.id });
    const listed = await m.dash.call('GET', '/requests?source=handle');
    expect(listed.body.requests.map((x: any) => x.request_id)).toEqual([r.body.request_id]);
    // The pay page knows it, but not the visitor's note: it is for the merchant (its dashboard shows it), and
    // under the merchant's name anyone could write "send the payment to 0x… instead" and share the link.
    const view = await call(svc.publicUrl, 'GET', `/pay/api/${r.body.request_id}`);
    expect(view.body).toMatchObject({ fiat_amount: 2500, merchant_name: 'Corner Café', memo: null });
    const page = await call(svc.publicUrl, 'GET', `/pay/${r.body.request_id}`);
    expect(page.text).toContain('Corner Café');
    expect(page.text).not.toContain('Thanks!');
    expect((await m.dash.call('GET', `/requests/${r.body.request_id}`)).body).toMatchObject({ memo: 'Thanks!' });
  });

  it.each([
    ['metadata', { fiat_amount_int: 100, metadata: { a: 'b' } }],
    ['metadata null (a field the form does not have, whatever its value)', { fiat_amount_int: 100, metadata: null }],
    ['expiry_minutes', { fiat_amount_int: 100, expiry_minutes: 60 }],
    ['customer_name', { fiat_amount_int: 100, customer_name: 'Ada' }],
    ['no amount', {}],
    ['a negative amount', { fiat_amount_int: -5 }],
    ['a long memo', { fiat_amount_int: 100, memo: 'x'.repeat(501) }],
  ])('%s → 400 invalid_request', async (_, body) => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    const r = await pay(h, body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1`, [m.id])).toEqual([]);
  });

  it('fiat_currency_code asserts the currency the page showed: another → 400 currency_mismatch with expected_fiat_code, nothing made', async () => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    expect((await view(h)).body.fiat_currency).toBe('usd');
    // The payer's page says USD; the merchant switches to EUR before the payer presses Pay.
    expect((await m.dash.call('PATCH', '/me', { body: { display_currency: 'eur' } })).status).toBe(200);
    const stale = await pay(h, { fiat_amount_int: 2500, fiat_currency_code: 'usd' });
    expect(stale.status).toBe(400);
    expect(stale.body).toEqual({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'eur' });
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1`, [m.id])).toEqual([]);
    const r = await pay(h, { fiat_amount_int: 2500, fiat_currency_code: 'EUR' });
    expect(r.status).toBe(201);
    expect((await sql(`SELECT fiat_amount, fiat_currency FROM payment_requests WHERE id = $1`, [r.body.request_id]))[0]).toEqual({ fiat_amount: 2500, fiat_currency: 'eur' });
    expect((await pay(h, { fiat_amount_int: 2500, fiat_currency_code: 12 })).body.error).toBe('invalid_request');
    // Sent as null, an optional field is one not sent, as on every create.
    const nulls = await pay(h, { fiat_amount_int: 300, fiat_currency_code: null, memo: null, customer_email: null });
    expect(nulls.status).toBe(201);
    expect((await sql(`SELECT fiat_currency, memo, customer_email FROM payment_requests WHERE id = $1`, [nulls.body.request_id]))[0]).toEqual({ fiat_currency: 'eur', memo: null, customer_email: null });
  });

  it('an Idempotency-Key replays: the same request (200, idempotent_replay), ten at once make one; another merchant\'s handle does not share it', async () => {
    const m = await merchant();
    const other = await merchant();
    const h = fresh();
    const ho = fresh();
    await claim(m.dash, h);
    await claim(other.dash, ho);
    const key = 'a'.repeat(16) + 'b'.repeat(16);
    const payKeyed = (handle: string, body: unknown) =>
      call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body, headers: { 'idempotency-key': key } });
    const first = await payKeyed(h, { fiat_amount_int: 1200 });
    expect(first.status).toBe(201);
    expect(first.body.idempotent_replay).toBeUndefined();
    // A retry after a lost answer; its new amount is ignored, as the API's replay ignores it (spec §4.1).
    const again = await payKeyed(h, { fiat_amount_int: 9900 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, idempotent_replay: true });
    // Ten submits of one key at once (a double click, a proxy's retry) make one request between them.
    const key2 = 'c'.repeat(40);
    const racing = await Promise.all(
      Array.from({ length: 10 }, () => call(svc.publicUrl, 'POST', `/m/api/${h}/requests`, { body: { fiat_amount_int: 700 }, headers: { 'idempotency-key': key2 } })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(racing.map((r) => r.body.request_id)).size).toBe(1);
    expect(await sql(`SELECT fiat_amount, idempotency_key FROM payment_requests WHERE merchant_id = $1 ORDER BY fiat_amount`, [m.id])).toEqual([
      { fiat_amount: 700, idempotency_key: `handle:${m.id}:${key2}` },
      { fiat_amount: 1200, idempotency_key: `handle:${m.id}:${key}` },
    ]);
    // The key is the merchant's: the same key on another merchant's handle makes that merchant's request.
    const elsewhere = await payKeyed(ho, { fiat_amount_int: 1200 });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.request_id).not.toBe(first.body.request_id);
  });

  it('a malformed Idempotency-Key → 400 invalid_idempotency_key, nothing made', async () => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    for (const key of ['short', 'x'.repeat(65), 'has space'.padEnd(40, 'y'), 'k:'.padEnd(40, 'z')]) {
      const r = await call(svc.publicUrl, 'POST', `/m/api/${h}/requests`, { body: { fiat_amount_int: 100 }, headers: { 'idempotency-key': key } });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ ok: false, error: 'invalid_idempotency_key' });
    }
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1`, [m.id])).toEqual([]);
  });

  it('a disabled merchant is not accepting payments: accepting_payments false, create 400 merchant_disabled', async () => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    await admin(svc, 'POST', `/merchants/${m.id}/disable`);
    expect((await view(h)).body).toMatchObject({ ok: true, accepting_payments: false });
    const r = await pay(h, { fiat_amount_int: 100 });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'merchant_disabled' });
    await admin(svc, 'POST', `/merchants/${m.id}/enable`);
    expect((await pay(h, { fiat_amount_int: 100 })).status).toBe(201);
  });

  it('is served on the public listener only', async () => {
    const m = await merchant();
    const h = fresh();
    await claim(m.dash, h);
    expect((await call(svc.adminUrl, 'GET', `/m/api/${h}`)).status).toBe(404);
    expect((await call(svc.adminUrl, 'GET', '/dashboard/api/nonce')).status).toBe(404);
  });
});

describe('rate limit per client address', () => {
  it('past PUBLIC_RATE_LIMIT calls a minute on a route → 429 rate_limited; each route counts apart', async () => {
    const limited = await startService({ env: { PUBLIC_RATE_LIMIT: '3' } });
    try {
      const lp = await createPartner(limited);
      const m = await createOnboardedMerchant(limited, lp.testKey);
      const dash = await signInDashboard(limited, m.wallet);
      const h = fresh();
      expect((await dash.call('PUT', '/handle', { body: { handle: h } })).status).toBe(200);
      freshMinute();
      const views = [];
      for (let i = 0; i < 4; i++) views.push((await call(limited.publicUrl, 'GET', `/m/api/${h}`)).status);
      expect(views).toEqual([200, 200, 200, 429]);
      const creates = [];
      for (let i = 0; i < 4; i++) creates.push((await call(limited.publicUrl, 'POST', `/m/api/${h}/requests`, { body: { fiat_amount_int: 100 + i } })));
      expect(creates.map((r) => r.status)).toEqual([201, 201, 201, 429]);
      expect(creates[3].body).toEqual({ ok: false, error: 'rate_limited' });
      expect(await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE merchant_id = $1`, [m.id])).toEqual([{ n: 3 }]);
    } finally {
      await limited.close();
    }
  });

  it('past HANDLE_REQUEST_RATE_LIMIT requests a minute through one handle, from any number of addresses → 429; other handles go on', async () => {
    // Each call from an address of its own (a /64 each), as a caller with many addresses would (an abuse hunt
    // made 1,200 requests in 15 s this way).
    const limited = await startService({ env: { HANDLE_REQUEST_RATE_LIMIT: '3', TRUST_PROXY: 'loopback' } });
    try {
      const lp = await createPartner(limited);
      const [a, b] = [await createOnboardedMerchant(limited, lp.testKey), await createOnboardedMerchant(limited, lp.testKey)];
      const [ha, hb] = [fresh(), fresh()];
      expect((await claim(await signInDashboard(limited, a.wallet), ha)).status).toBe(200);
      expect((await claim(await signInDashboard(limited, b.wallet), hb)).status).toBe(200);
      freshMinute();
      const from = (i: number) => ({ 'x-forwarded-for': `2001:db8:${(i + 1).toString(16)}::1` });
      const creates = [];
      for (let i = 0; i < 4; i++) {
        creates.push(await call(limited.publicUrl, 'POST', `/m/api/${ha}/requests`, { body: { fiat_amount_int: 100 + i }, headers: from(i) }));
      }
      expect(creates.map((r) => r.status)).toEqual([201, 201, 201, 429]);
      expect(creates[3].body).toEqual({ ok: false, error: 'rate_limited' });
      expect((await call(limited.publicUrl, 'POST', `/m/api/${hb}/requests`, { body: { fiat_amount_int: 100 }, headers: from(9) })).status).toBe(201);
      expect(await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE merchant_id = $1`, [a.id])).toEqual([{ n: 3 }]);
    } finally {
      await limited.close();
    }
  });

  it('one address alone makes at most HANDLE_ADDRESS_RATE_LIMIT a minute through a handle: it cannot spend the page\'s budget for every payer', async () => {
    const PER_ADDRESS = 4;
    const limited = await startService({ env: { HANDLE_REQUEST_RATE_LIMIT: '100', HANDLE_ADDRESS_RATE_LIMIT: String(PER_ADDRESS), TRUST_PROXY: 'loopback' } });
    try {
      const lp = await createPartner(limited);
      const m = await createOnboardedMerchant(limited, lp.testKey);
      const h = fresh();
      expect((await claim(await signInDashboard(limited, m.wallet), h)).status).toBe(200);
      freshMinute();
      const one = { 'x-forwarded-for': '2001:db8:aa::1' };
      const statuses = [];
      for (let i = 0; i <= PER_ADDRESS; i++) {
        statuses.push((await call(limited.publicUrl, 'POST', `/m/api/${h}/requests`, { body: { fiat_amount_int: 200 + i }, headers: one })).status);
      }
      expect(statuses).toEqual([...Array(PER_ADDRESS).fill(201), 429]);
      const another = { 'x-forwarded-for': '2001:db8:bb::1' };
      expect((await call(limited.publicUrl, 'POST', `/m/api/${h}/requests`, { body: { fiat_amount_int: 300 }, headers: another })).status).toBe(201);
    } finally {
      await limited.close();
    }
  });
});
