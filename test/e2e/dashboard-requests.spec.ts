import { request, type IncomingMessage } from 'node:http';
import { recordProofEvent } from '../factories/events';
import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { idemKey, mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { freshMinute } from '../support/clock';
import { call } from '../support/http';
import { Receiver } from '../support/receiver';
import { RedisServer } from '../support/redis-server';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { DASHBOARD_ITEM_FIELDS as ITEM_FIELDS, ISO_MS_RE, keysOf, MERCHANT_FIELDS, REQUEST_FIELDS, UUID_RE } from '../support/shapes';

/*
 * DESIGN §5 "Dashboard API" and §8: the signed-in merchant's own requests (created through the partner API's
 * create path, metadata null for the partner and its webhooks), lists, CSV, cancel, settings. Two partners,
 * three merchants: every read and change is the signed-in merchant's only.
 */
let svc: TestService;
let receiver: Receiver;
let pa: TestPartner;
let pb: TestPartner;
let a: DashboardClient; // partner A's merchant, signed in
let a2: DashboardClient; // another merchant of partner A
let b: DashboardClient; // partner B's merchant

beforeAll(async () => {
  svc = await startService({ worker: true });
  receiver = await Receiver.start();
  pa = await createPartner(svc);
  pb = await createPartner(svc);
  const put = await admin(svc, 'PUT', `/partners/${pa.id}/webhook`, { url: receiver.url, enabled: true });
  if (put.status !== 200) throw new Error(put.text);
  a = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
  a2 = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
  b = await signInDashboard(svc, (await createOnboardedMerchant(svc, pb.testKey)).wallet);
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
  await closeSql();
});

const create = (c: DashboardClient, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  c.call('POST', '/requests', { body, headers });
const partnerGet = (key: string, id: string) => call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key });

describe('POST /dashboard/api/requests', () => {
  it('creates the merchant\'s request: 201, source dashboard, metadata null, payment_mode pos, the partner\'s default expiry', async () => {
    const r = await create(a, { fiat_amount_int: 1250, memo: 'Table 4', customer_name: 'Ada', customer_email: 'ada@example.com', customer_phone: '+15550100' });
    expect(r.status).toBe(201);
    expect(keysOf(r.body)).toEqual(ITEM_FIELDS);
    expect(r.body).toMatchObject({
      ok: true, request_id: expect.stringMatching(UUID_RE), status: 'requested', proof_status: 'none', account_id: a.merchantId,
      fiat_amount: 1250, fiat_currency: 'usd', metadata: null, source: 'dashboard', plan_id: null, period_index: null,
      memo: 'Table 4', customer_name: 'Ada', customer_email: 'ada@example.com', customer_phone: '+15550100',
      pay_page_url: `${svc.config.payUrl}/${r.body.request_id}`,
      // $12.50 at 1 USD a token: 12.5 tokens of 6 decimals, in base units as the partner sees it.
      amount: '12500000',
    });
    expect(r.body.created_at).toMatch(ISO_MS_RE);
    expect(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)).toBe(60 * 60_000);
    const [row] = await sql(`SELECT payment_mode, source, metadata, partner_id, test_mode FROM payment_requests WHERE id = $1`, [r.body.request_id]);
    expect(row).toEqual({ payment_mode: 'pos', source: 'dashboard', metadata: null, partner_id: pa.id, test_mode: true });
  });

  it('is the partner\'s request: the partner API gets and lists it with metadata null', async () => {
    const r = await create(a, { fiat_amount_int: 700 });
    const got = await partnerGet(pa.testKey, r.body.request_id);
    expect(got.status).toBe(200);
    expect(keysOf(got.body)).toEqual(REQUEST_FIELDS);
    expect(got.body).toMatchObject({ request_id: r.body.request_id, metadata: null, account_id: a.merchantId });
    const list = await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${a.merchantId}&limit=100`, { key: pa.testKey });
    expect(list.body.requests.find((x: any) => x.request_id === r.body.request_id)).toMatchObject({ metadata: null });
    // Another partner, or the other mode's key, does not see it.
    expect((await partnerGet(pb.testKey, r.body.request_id)).status).toBe(404);
    expect((await partnerGet(pa.liveKey, r.body.request_id)).status).toBe(404);
  });

  it('its webhook carries metadata null', async () => {
    const r = await create(a, { fiat_amount_int: 800 });
    await recordProofEvent(svc, { partnerId: pa.id, requestId: r.body.request_id });
    const calls = await receiver.waitUntil((cs) => cs.some((c) => c.json().request_id === r.body.request_id));
    const payload = calls.find((c) => c.json().request_id === r.body.request_id)!.json();
    expect(payload).toMatchObject({ event: 'payment.proof_attached', request_id: r.body.request_id, account_id: a.merchantId, metadata: null });
    expect(Object.keys(payload)).toContain('metadata');
  });

  it.each([
    ['metadata (an unknown field here)', { fiat_amount_int: 100, metadata: { order: '1' } }],
    ['metadata null (unknown whatever its value)', { fiat_amount_int: 100, metadata: null }],
    ['account_id', { fiat_amount_int: 100, account_id: '00000000-0000-0000-0000-000000000000' }],
    ['payment_mode', { fiat_amount_int: 100, payment_mode: 'service' }],
    ['no amount', {}],
    ['a zero amount', { fiat_amount_int: 0 }],
    ['an amount over 2147483647', { fiat_amount_int: 2147483648 }],
    ['a string amount', { fiat_amount_int: '100' }],
    ['a memo over 500 chars', { fiat_amount_int: 100, memo: 'x'.repeat(501) }],
    ['a customer_name over 200 chars', { fiat_amount_int: 100, customer_name: 'x'.repeat(201) }],
    ['a customer_email over 254 chars', { fiat_amount_int: 100, customer_email: 'x'.repeat(255) }],
    ['a customer_phone over 50 chars', { fiat_amount_int: 100, customer_phone: '1'.repeat(51) }],
  ])('%s → 400 invalid_request, nothing created', async (_, body) => {
    const before = await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE merchant_id = $1`, [a.merchantId]);
    const r = await create(a, body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_request', errors: expect.any(Array) });
    expect(await sql(`SELECT count(*)::int AS n FROM payment_requests WHERE merchant_id = $1`, [a.merchantId])).toEqual(before);
  });

  it('expiry_minutes must be one of the partner\'s allowed values', async () => {
    const bad = await create(a, { fiat_amount_int: 100, expiry_minutes: 7 });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_expiry_minutes', allowed_expiry_minutes: expect.arrayContaining([15, 60, 1440]) });
    const ok = await create(a, { fiat_amount_int: 100, expiry_minutes: 1440 });
    expect(ok.status).toBe(201);
    expect(Date.parse(ok.body.expires_at) - Date.parse(ok.body.created_at)).toBe(1440 * 60_000);
  });

  it('optional fields sent as null read as absent: the partner\'s default expiry, no customer fields', async () => {
    // Before: expiry_minutes null → 400 invalid_expiry_minutes (null checked against the allowed list).
    const r = await create(a, { fiat_amount_int: 100, memo: null, customer_name: null, customer_email: null, customer_phone: null, expiry_minutes: null, fiat_currency_code: null });
    expect({ status: r.status, text: r.status === 201 ? '' : r.text }).toEqual({ status: 201, text: '' });
    expect(r.body).toMatchObject({ memo: null, customer_name: null, customer_email: null, customer_phone: null });
    expect(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)).toBe(60 * 60_000);
  });

  it('an Idempotency-Key header replays like the API\'s key: 200 with the original, idempotent_replay true', async () => {
    const key = idemKey();
    const first = await create(a, { fiat_amount_int: 4200 }, { 'idempotency-key': key });
    const again = await create(a, { fiat_amount_int: 9999 }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ request_id: first.body.request_id, fiat_amount: 4200, idempotent_replay: true });
    // Another merchant with the same key, and the partner API with the same literal key, create new requests.
    const other = await create(a2, { fiat_amount_int: 4200 }, { 'idempotency-key': key });
    expect(other.status).toBe(201);
    const viaApi = await mustCreateRequest(svc, pa.testKey, { account_id: a.merchantId, fiat_amount_int: 4200, idempotency_key: key });
    expect(viaApi.request_id).not.toBe(first.body.request_id);
    const [{ k }] = await sql(`SELECT idempotency_key AS k FROM payment_requests WHERE id = $1`, [first.body.request_id]);
    expect(k).toBe(`dashboard:${a.merchantId}:${key}`);
  });

  it('a malformed Idempotency-Key is 400 invalid_idempotency_key', async () => {
    const r = await create(a, { fiat_amount_int: 100 }, { 'idempotency-key': 'short' });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_idempotency_key');
  });

  it('a live-mode merchant\'s request is live: the live key sees it, the test key does not', async () => {
    const live = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.liveKey)).wallet);
    const r = await create(live, { fiat_amount_int: 300 });
    expect(r.status).toBe(201);
    expect((await partnerGet(pa.liveKey, r.body.request_id)).body).toMatchObject({ metadata: null });
    expect((await partnerGet(pa.testKey, r.body.request_id)).status).toBe(404);
  });
});

describe('GET /dashboard/api/requests and /:id', () => {
  let mine: DashboardClient;
  let ids: string[];
  beforeAll(async () => {
    mine = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    ids = [];
    for (const amount of [100, 200, 300]) ids.push((await create(mine, { fiat_amount_int: amount })).body.request_id);
    // One the partner created for this merchant, with metadata.
    ids.push((await mustCreateRequest(svc, pa.testKey, { account_id: mine.merchantId, fiat_amount_int: 400, metadata: { order: '7' } })).request_id);
    expect((await mine.call('POST', `/requests/${ids[0]}/cancel`)).status).toBe(200);
  });

  it('lists only the merchant\'s requests, oldest first, as items with source and customer fields', async () => {
    const r = await mine.call('GET', '/requests');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    expect(r.body.requests.map((x: any) => x.request_id)).toEqual(ids);
    for (const item of r.body.requests) expect(keysOf(item)).toEqual(ITEM_FIELDS);
    expect(r.body.requests[3]).toMatchObject({ source: 'partner', metadata: { order: '7' } });
  });

  it.each([
    ['source=dashboard', [0, 1, 2]],
    ['source=partner', [3]],
    ['source=handle', []],
    ['status=voided', [0]],
    ['status=requested', [1, 2, 3]],
    ['proof_status=none', [0, 1, 2, 3]],
    ['plan_id=00000000-0000-4000-8000-000000000000', []],
    ['limit=2', [0, 1]],
    ['limit=2&offset=2', [2, 3]],
  ])('filters: %s', async (query, expected) => {
    const r = await mine.call('GET', `/requests?${query}`);
    expect(r.status).toBe(200);
    expect(r.body.requests.map((x: any) => x.request_id)).toEqual((expected as number[]).map((i) => ids[i]));
  });

  it('since and until bound created_at', async () => {
    const all = (await mine.call('GET', '/requests')).body.requests;
    const since = (await mine.call('GET', `/requests?since=${encodeURIComponent(all[1].created_at)}`)).body.requests;
    expect(since[0].request_id).toBe(ids[1]);
    const until = (await mine.call('GET', `/requests?until=${encodeURIComponent(all[1].created_at)}`)).body.requests;
    expect(until.map((x: any) => x.request_id)).toEqual([ids[0]]);
  });

  it.each(['account_id=' + '00000000-0000-4000-8000-000000000000', 'limit=101', 'offset=-1', 'status=paid', 'source=api', 'plan_id=nope', 'since=yesterday', 'since=2026-W48', 'until=2026', 'since=2024-01-01T00:00%2B16:00', 'colour=red'])(
    'a bad query (%s) is 400 invalid_request',
    async (query) => {
      const r = await mine.call('GET', `/requests?${query}`);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    },
  );

  it('the detail is one item plus notifications; another merchant\'s id is 404 not_found, like an unknown one', async () => {
    const r = await mine.call('GET', `/requests/${ids[1]}`);
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual([...ITEM_FIELDS, 'notifications'].sort());
    expect(r.body).toMatchObject({ request_id: ids[1], notifications: [], amount: '2000000' });
    for (const other of [a, a2, b]) {
      const x = await other.call('GET', `/requests/${ids[1]}`);
      expect(x.status).toBe(404);
      expect(x.body).toEqual({ ok: false, error: 'not_found' });
      expect((await other.call('GET', '/requests?limit=100')).body.requests.map((i: any) => i.request_id)).not.toContain(ids[1]);
    }
    expect((await mine.call('GET', '/requests/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await mine.call('GET', '/requests/not-a-uuid')).status).toBe(404);
  });

  it('GET /assets reads amounts: the mode\'s token, plus a request\'s asset_id the chain module stored (an asset no mode uses now)', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const seed = (await create(c, { fiat_amount_int: 100 })).body;
    const current = { asset_id: seed.asset_id, symbol: 'TUSD', decimals: 6 };
    const r = await c.call('GET', '/assets');
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body).toEqual({ ok: true, assets: [current] });
    // Asking for the mode's own asset (any case of its address) lists it once.
    expect((await c.call('GET', `/assets?asset_id=${encodeURIComponent(seed.asset_id.replace(/0x([0-9a-f]+)$/, (_: string, hex: string) => `0x${hex.toUpperCase()}`))}`)).body)
      .toEqual({ ok: true, assets: [current] });

    const [retired, unknown] = ['0x' + 'ab'.repeat(20), '0x' + 'cd'.repeat(20)];
    // What the chain module stored when the retired token was configured (its table, seeded as it would hold it).
    await sql(`INSERT INTO assets (chain_id, token_address, symbol, decimals) VALUES ($1, $2, 'OLD', 2) ON CONFLICT DO NOTHING`, [testEnv().chainId, retired]);
    await sql(
      `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate, amount,
         chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until, created_at, source)
       SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, '~' || gen_random_uuid(), fiat_amount, fiat_currency, rate, '123456',
              chain_id, $2, recipient, 'pos', NULL, expires_at, claim_until, created_at + interval '1 second', 'dashboard'
         FROM payment_requests WHERE id = $1`,
      [seed.request_id, retired],
    );
    // The items stay DESIGN's: no token field; the asset_id names the retired token.
    const items = (await c.call('GET', '/requests')).body.requests;
    expect(items.map((x: any) => x.amount)).toEqual(['1000000', '123456']);
    for (const x of items) expect(keysOf(x)).toEqual(ITEM_FIELDS);
    const old = items[1];
    expect(old.asset_id).toBe(`eip155:${testEnv().chainId}/erc20:${retired}`);
    expect((await c.call('GET', `/assets?asset_id=${encodeURIComponent(old.asset_id)}`)).body)
      .toEqual({ ok: true, assets: [current, { asset_id: old.asset_id, symbol: 'OLD', decimals: 2 }] });
    // Never read, or on a chain id past what any stored asset can have: not listed (the page shows base units).
    for (const never of [`eip155:${testEnv().chainId}/erc20:${unknown}`, `eip155:99999999999999999999/erc20:${retired}`]) {
      expect((await c.call('GET', `/assets?asset_id=${encodeURIComponent(never)}`)).body).toEqual({ ok: true, assets: [current] });
    }
  });

  it.each(['asset_id=usdc', 'asset_id=eip155:1/erc20:0x12', 'asset_id=a&asset_id=b', 'colour=red'])('GET /assets with a bad query (%s) is 400 invalid_request', async (query) => {
    const r = await a.call('GET', `/assets?${query}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('GET /assets needs the session like every dashboard call: 401 unauthorized signed out', async () => {
    const r = await call(svc.publicUrl, 'GET', '/dashboard/api/assets');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ ok: false, error: 'unauthorized' });
  });

  it('the partner\'s list still works and includes the merchant\'s dashboard requests', async () => {
    const r = await call(svc.publicUrl, 'GET', `/api/v1/requests?account_id=${mine.merchantId}`, { key: pa.testKey });
    expect(r.status).toBe(200);
    expect(r.body.requests.map((x: any) => x.request_id)).toEqual(ids);
    expect(r.body.requests.map((x: any) => x.metadata)).toEqual([null, null, null, { order: '7' }]);
  });
});

describe('POST /dashboard/api/requests/:id/cancel', () => {
  it('voids a requested request with no proof; otherwise 409 cannot_cancel with the request; another merchant\'s is 404', async () => {
    const r = await create(a, { fiat_amount_int: 555 });
    expect((await b.call('POST', `/requests/${r.body.request_id}/cancel`)).status).toBe(404);
    expect((await a2.call('POST', `/requests/${r.body.request_id}/cancel`)).status).toBe(404);
    const ok = await a.call('POST', `/requests/${r.body.request_id}/cancel`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, request_id: r.body.request_id, status: 'voided', source: 'dashboard' });
    const again = await a.call('POST', `/requests/${r.body.request_id}/cancel`);
    expect(again.status).toBe(409);
    // The dashboard item beside the error (source, plan_id, memo, … included), not the partner's object.
    expect(again.body).toEqual({ ...ok.body, ok: false, error: 'cannot_cancel' });
    expect(again.body).toMatchObject({ request_id: r.body.request_id, status: 'voided', source: 'dashboard', plan_id: null, period_index: null });

    const opened = await create(a, { fiat_amount_int: 556 });
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${opened.body.request_id}/open`)).status).toBe(200);
    const refused = await a.call('POST', `/requests/${opened.body.request_id}/cancel`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'cannot_cancel', status: 'opened' });
  });

  it('needs the CSRF header', async () => {
    const r = await create(a, { fiat_amount_int: 557 });
    expect((await a.call('POST', `/requests/${r.body.request_id}/cancel`, { csrf: false })).status).toBe(403);
    expect((await partnerGet(pa.testKey, r.body.request_id)).body.status).toBe('requested');
  });
});

describe('GET /dashboard/api/requests.csv', () => {
  const parse = (text: string) => {
    // RFC 4180, enough for these fixtures: quoted fields may hold commas, quotes and line breaks.
    const rows: string[][] = [];
    let row: string[] = [];
    let field = '';
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (quoted) {
        if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
        else if (ch === '"') quoted = false;
        else field += ch;
      } else if (ch === '"') quoted = true;
      else if (ch === ',') row.push(field), (field = '');
      else if (ch === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++;
      else field += ch;
    }
    return rows;
  };
  const csv = (c: DashboardClient, query = '') => c.call('GET', `/requests.csv${query}`);

  it('exports every matching request (no page limit) with the exact columns, RFC 4180 quoting, empty fields for null', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const tricky = 'Say "hi", then\r\nnew line';
    const first = await create(c, { fiat_amount_int: 1000, memo: tricky });
    const plain = await create(c, { fiat_amount_int: 1001 });
    // 520 more, several sharing one created_at, so the export crosses batches and breaks ties on the id.
    await sql(
      `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate, amount,
         chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until, created_at, source)
       SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, '~' || gen_random_uuid(), 5, fiat_currency, rate, amount + g,
              chain_id, token_address, recipient, 'pos', NULL, expires_at, claim_until, created_at + (g / 7) * interval '1 millisecond' + interval '1 second', 'dashboard'
         FROM payment_requests, generate_series(1, 520) g WHERE id = $1`,
      [plain.body.request_id],
    );
    const r = await csv(c);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = parse(r.text);
    // Exactly DESIGN §5's columns, in order (amount in base units, as the API).
    expect(rows[0]).toEqual(['request_id', 'created_at', 'status', 'proof_status', 'fiat_amount', 'fiat_currency', 'amount', 'asset_id', 'tx_hash', 'proof_verified_at', 'source', 'plan_id', 'memo']);
    expect(r.text.startsWith('request_id,created_at,status,proof_status,fiat_amount,fiat_currency,amount,asset_id,tx_hash,proof_verified_at,source,plan_id,memo\r\n')).toBe(true);
    expect(rows).toHaveLength(1 + 522);
    const ids = rows.slice(1).map((x) => x[0]);
    expect(new Set(ids).size).toBe(522);
    const api = (await c.call('GET', '/requests?limit=100')).body.requests;
    expect(ids.slice(0, 100)).toEqual(api.map((x: any) => x.request_id));
    const item = (await c.call('GET', `/requests/${first.body.request_id}`)).body;
    expect(rows[1]).toEqual([
      item.request_id, item.created_at, 'requested', 'none', '1000', 'usd', '10000000', item.asset_id, '', '', 'dashboard', '', tricky,
    ]);
    expect(rows.every((x) => x.length === 13)).toBe(true);
    expect(r.text).toContain('"Say ""hi"", then\r\nnew line"');
    expect(r.text.endsWith('\r\n')).toBe(true);
  });

  it('applies the list\'s filters and refuses a bad query with 400', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const kept = await create(c, { fiat_amount_int: 10 });
    const voided = await create(c, { fiat_amount_int: 11 });
    await c.call('POST', `/requests/${voided.body.request_id}/cancel`);
    const rowsOf = async (query: string) => {
      const r = await csv(c, query);
      // A refusal (a JSON body) would parse as no rows at all: say what came back instead.
      expect({ status: r.status, refusal: r.status === 200 ? null : r.text }).toEqual({ status: 200, refusal: null });
      return parse(r.text).slice(1).map((x) => x[0]);
    };
    expect(await rowsOf('?status=voided')).toEqual([voided.body.request_id]);
    expect(await rowsOf('?status=requested&source=dashboard')).toEqual([kept.body.request_id]);
    expect((await csv(c, '?status=paid')).status).toBe(400);
    // Refused before the first row is written (a value Postgres refuses used to cut the stream mid-response).
    const late = await csv(c, '?since=2024-01-01T00:00-17:00');
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_request');
    for (const other of [a, a2, b]) {
      const text = (await csv(other)).text;
      expect(text).not.toContain(kept.body.request_id);
      expect(text).not.toContain(voided.body.request_id);
    }
    // Without a session there is no export.
    expect((await call(svc.publicUrl, 'GET', '/dashboard/api/requests.csv')).status).toBe(401);
  });
});

describe('disabled merchant', () => {
  it('creates nothing (400 merchant_disabled, a replay still returns the original) and reads everything', async () => {
    const m = await createOnboardedMerchant(svc, pa.testKey);
    const c = await signInDashboard(svc, m.wallet);
    const key = idemKey();
    const before = await create(c, { fiat_amount_int: 900 }, { 'idempotency-key': key });
    expect((await admin(svc, 'POST', `/merchants/${m.id}/disable`)).status).toBe(200);
    const refused = await create(c, { fiat_amount_int: 901 });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ ok: false, error: 'merchant_disabled' });
    const replay = await create(c, { fiat_amount_int: 901 }, { 'idempotency-key': key });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ request_id: before.body.request_id, idempotent_replay: true });
    expect((await c.call('GET', '/requests')).body.requests.map((x: any) => x.request_id)).toEqual([before.body.request_id]);
    expect((await c.call('GET', `/requests/${before.body.request_id}`)).status).toBe(200);
    expect((await c.call('GET', '/requests.csv')).text).toContain(before.body.request_id);
    expect((await c.call('GET', '/me')).body.disabled).toBe(true);
  });
});

describe('CSV hardening', () => {
  it('a memo a spreadsheet would run as a formula gets a leading quote; other columns stay as they are', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    const memos = ['=HYPERLINK("http://evil.example","x")', '+1+1', '-2+3', '@SUM(A1)', '\tTab', '\rCR', 'plain =not first'];
    for (const memo of memos) await create(c, { fiat_amount_int: 100, memo });
    const r = await c.call('GET', '/requests.csv');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    const lines = r.text.split('\r\n');
    expect(r.text).toContain(`,"'=HYPERLINK(""http://evil.example"",""x"")"\r\n`);
    for (const shown of [",'+1+1", ",'-2+3", ",'@SUM(A1)", ",'\tTab", ',plain =not first']) {
      expect(lines.some((l) => l.endsWith(shown))).toBe(true);
    }
    expect(r.text).toContain(`,"'\rCR"\r\n`);
    // The API itself shows the memo as stored.
    expect((await c.call('GET', '/requests?limit=100')).body.requests.map((x: any) => x.memo)).toEqual(expect.arrayContaining(memos));
  });

  it('one export per merchant at a time: a second while the first streams → 429 rate_limited; afterwards it works again', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    await seedLongExport(c);
    const first = await pausedExport(svc.publicUrl, c.cookie);
    try {
      const second = await c.call('GET', '/requests.csv');
      expect(second.status).toBe(429);
      expect(second.body).toMatchObject({ ok: false, error: 'rate_limited' });
      // Another merchant's export is not held up.
      expect((await a2.call('GET', '/requests.csv')).status).toBe(200);
    } finally {
      first.destroy();
    }
    // Polled gently: the export route allows 10 calls a minute per merchant.
    await waitFor(async () => (await c.call('GET', '/requests.csv?status=voided')).status === 200, 15000, 1000);
  });

  it('the rule holds across instances: while one streams the merchant\'s export, another instance answers 429, and 200 once it ends', async () => {
    // A second API instance on the same Redis (prefix) and Postgres, as in production behind a load balancer.
    const other = await startService({ env: { REDIS_PREFIX: svc.config.redisPrefix } });
    try {
      const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
      await seedLongExport(c);
      const onOther = (client: DashboardClient, query = '') =>
        call(other.publicUrl, 'GET', `/dashboard/api/requests.csv${query}`, { headers: { cookie: client.cookie } });
      const first = await pausedExport(svc.publicUrl, c.cookie);
      try {
        const second = await onOther(c);
        expect(second.status).toBe(429);
        expect(second.body).toMatchObject({ ok: false, error: 'rate_limited' });
        expect((await onOther(a2)).status).toBe(200);
      } finally {
        first.destroy();
      }
      // The first instance released the lease when its export ended: the other instance exports now.
      await waitFor(async () => (await onOther(c, '?status=voided')).status === 200, 15000, 1000);
      // And the other way round: an export streaming on the second instance holds the first back.
      const again = await pausedExport(other.publicUrl, c.cookie);
      try {
        expect((await c.call('GET', '/requests.csv')).status).toBe(429);
      } finally {
        again.destroy();
      }
    } finally {
      await other.close();
    }
  });
});

describe('CSV export with Redis away', () => {
  it('fails open to this instance\'s rule: the export streams, a second of the merchant\'s on the same instance is 429', async () => {
    const redis = await RedisServer.start();
    const alone = await startService({ env: { REDIS_URL: redis.url } });
    try {
      const c = await signInDashboard(alone, (await createOnboardedMerchant(alone, pa.testKey)).wallet);
      await seedLongExport(c);
      await redis.down();
      const first = await pausedExport(alone.publicUrl, c.cookie);
      try {
        const second = await c.call('GET', '/requests.csv');
        expect(second.status).toBe(429);
        expect(second.body).toMatchObject({ ok: false, error: 'rate_limited' });
      } finally {
        first.destroy();
      }
      await waitFor(async () => (await c.call('GET', '/requests.csv?status=voided')).status === 200, 15000, 200);
    } finally {
      await alone.close();
      await redis.down();
    }
  });
});

/** Enough rows for merchant `c` that an unread response fills the socket and the export waits on back-pressure. */
async function seedLongExport(c: DashboardClient): Promise<void> {
  const seed = await create(c, { fiat_amount_int: 5 });
  await sql(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate, amount,
       chain_id, token_address, recipient, payment_mode, metadata, expires_at, claim_until, created_at, source, memo)
     SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, '~' || gen_random_uuid(), 5, fiat_currency, rate, amount + g,
            chain_id, token_address, recipient, 'pos', NULL, expires_at, claim_until, created_at + g * interval '1 millisecond', 'dashboard', repeat('m', 400)
       FROM payment_requests, generate_series(1, 30000) g WHERE id = $1`,
    [seed.body.request_id],
  );
}

/** An export that has answered 200 and is left unread, so it keeps streaming until the caller destroys it. */
async function pausedExport(base: string, cookie: string): Promise<IncomingMessage> {
  const req = request(`${base}/dashboard/api/requests.csv`, { headers: { cookie } });
  const started = new Promise<IncomingMessage>((resolve, reject) => req.on('response', resolve).on('error', reject));
  req.end();
  const res = await started;
  expect(res.statusCode).toBe(200);
  res.pause();
  return res;
}

describe('rate limit per merchant on the dashboard\'s changes', () => {
  it('past 60 changes a minute on a route → 429 rate_limited, whichever session; reads and other merchants go on', async () => {
    const m = await createOnboardedMerchant(svc, pa.testKey);
    const [one, two] = [await signInDashboard(svc, m.wallet), await signInDashboard(svc, m.wallet)];
    freshMinute();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await (i % 2 ? one : two).call('PATCH', '/me', { body: { industry: `retail ${i}` } })).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const over = await one.call('PATCH', '/me', { body: { industry: 'too many' } });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ ok: false, error: 'rate_limited' });
    expect((await one.call('GET', '/me')).body.industry).toBe('retail 59');
    expect((await two.call('GET', '/me')).status).toBe(200);
    expect((await a2.call('PATCH', '/me', { body: { industry: 'fine' } })).status).toBe(200);
  });
});

describe('response headers of the JSON APIs', () => {
  it('every /dashboard/api/* and /m/api/* answer, errors included, is Cache-Control no-store and nosniff', async () => {
    const replies = [
      await a.call('GET', '/me'),
      await a.call('GET', '/session'),
      await a.call('GET', '/requests'),
      await a.call('GET', '/requests/00000000-0000-4000-8000-000000000000'),
      await call(svc.publicUrl, 'GET', '/dashboard/api/me'),
      await call(svc.publicUrl, 'GET', '/dashboard/api/nonce'),
      await call(svc.publicUrl, 'POST', '/dashboard/api/session', { raw: '{', headers: { 'content-type': 'application/json' } }),
      await call(svc.publicUrl, 'GET', '/m/api/no-such-handle'),
      await call(svc.publicUrl, 'POST', '/m/api/no-such-handle/requests', { body: { fiat_amount_int: 1 } }),
    ];
    for (const r of replies) {
      expect([r.status, r.headers.get('cache-control'), r.headers.get('x-content-type-options')]).toEqual([r.status, 'no-store', 'nosniff']);
    }
  });

  it('so is every answer of the APIs a secret link opens: pay, payer plan, onboarding', async () => {
    const created = await a.call('POST', '/requests', { body: { fiat_amount_int: 4321 } });
    expect(created.status).toBe(201);
    const replies = [
      await call(svc.publicUrl, 'GET', `/pay/api/${created.body.request_id}`),
      await call(svc.publicUrl, 'GET', '/pay/api/00000000-0000-4000-8000-000000000000'),
      await call(svc.publicUrl, 'GET', '/plan/api/short'),
      await call(svc.publicUrl, 'GET', `/onboarding/api/${'A'.repeat(43)}`),
    ];
    expect(replies.map((r) => r.status)).toEqual([200, 404, 404, 404]);
    for (const r of replies) {
      expect([r.headers.get('cache-control'), r.headers.get('x-content-type-options')]).toEqual(['no-store', 'nosniff']);
    }
  });
});

describe('GET and PATCH /dashboard/api/me', () => {
  const ME_FIELDS = [...MERCHANT_FIELDS.filter((f) => f !== 'onboarding_url'), 'handle', 'handle_url', 'email_enabled', 'sms_enabled'].sort();

  it('shows the merchant (spec §2.2 without onboarding_url) with its handle and what can be sent', async () => {
    const r = await a.call('GET', '/me');
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(ME_FIELDS);
    expect(r.body).toMatchObject({
      ok: true, merchant_id: a.merchantId, onboarding_status: 'complete', home_portal: pa.slug, test_mode: true,
      handle: null, handle_url: null, email_enabled: false, sms_enabled: false,
    });
  });

  it('updates the merchant\'s own fields, validated as spec §4.5; null clears one', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey, { phone: '123' })).wallet);
    const body = {
      display_name: 'Corner Café', business_name: 'Corner Café Ltd', email: 'owner@corner.example', phone: null,
      website: 'https://corner.example', instagram: '@corner', industry: 'food', country: 'FR',
    };
    const r = await c.call('PATCH', '/me', { body });
    expect(r.status).toBe(200);
    expect(keysOf(r.body)).toEqual(ME_FIELDS);
    expect(r.body).toMatchObject(body);
    const partnerView = await call(svc.publicUrl, 'GET', `/api/v1/merchants/${c.merchantId}`, { key: pa.testKey });
    expect(partnerView.body).toMatchObject(body);
  });

  it.each([
    ['a lower-case country', { country: 'fr' }],
    ['a bad email', { email: 'not-an-email' }],
    ['an email with a quoted local part (its notes could not be sent)', { email: '"owner.x"@example.com' }],
    ['two email addresses', { email: 'a@example.com, b@example.com' }],
    ['a display_name over 120', { display_name: 'x'.repeat(121) }],
    ['a phone over 32', { phone: '1'.repeat(33) }],
    ['an unsupported currency', { display_currency: 'xyz' }],
    ['a null currency', { display_currency: null }],
    ['a field that is not the merchant\'s to change', { wallet_address: '0x' + '1'.repeat(40) }],
    ['disabled', { disabled: false }],
  ])('%s → 400 invalid_request, nothing changes', async (_, body) => {
    const before = (await a.call('GET', '/me')).body;
    const r = await a.call('PATCH', '/me', { body });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect((await a.call('GET', '/me')).body).toEqual(before);
  });

  it('a new display_currency reaches request creation at once', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    expect((await create(c, { fiat_amount_int: 100 })).body.fiat_currency).toBe('usd'); // cached for create now
    expect((await c.call('PATCH', '/me', { body: { display_currency: 'EUR' } })).body.display_currency).toBe('eur');
    const r = await create(c, { fiat_amount_int: 100 });
    expect(r.status).toBe(201);
    expect(r.body.fiat_currency).toBe('eur');
  });

  it('fiat_currency_code asserts the currency the form showed, as the API\'s does: another → 400 currency_mismatch, nothing made', async () => {
    const c = await signInDashboard(svc, (await createOnboardedMerchant(svc, pa.testKey)).wallet);
    // The form was rendered in USD; the merchant then switched to EUR in another tab.
    expect((await c.call('PATCH', '/me', { body: { display_currency: 'eur' } })).status).toBe(200);
    const stale = await create(c, { fiat_amount_int: 2500, fiat_currency_code: 'usd' });
    expect(stale.status).toBe(400);
    expect(stale.body).toEqual({ ok: false, error: 'currency_mismatch', expected_fiat_code: 'eur' });
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1`, [c.merchantId])).toEqual([]);
    const fresh = await create(c, { fiat_amount_int: 2500, fiat_currency_code: 'EUR' });
    expect(fresh.status).toBe(201);
    expect(fresh.body).toMatchObject({ fiat_amount: 2500, fiat_currency: 'eur' });
    const malformed = await create(c, { fiat_amount_int: 2500, fiat_currency_code: 'euro' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('invalid_request');
  });
});
