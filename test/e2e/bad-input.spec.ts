import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call, type Reply } from '../support/http';

/*
 * "Bad input always gets a clear error in the documented envelope, and changes nothing": what a helper's fuzzing
 * of every surface found (2026-11-27), each of which failed before its fix.
 */
let svc: TestService;
let p: TestPartner;
let dash: DashboardClient;
let handle: string;
let merchantId: string;
const LONE = 'a\ud800@example.com'; // a lone UTF-16 surrogate inside an email

beforeAll(async () => {
  svc = await startService({ env: { RATE_LIMIT_SCALE: '100' } });
  p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  merchantId = m.id;
  dash = await signInDashboard(svc, m.wallet);
  handle = `fz${Date.now().toString(36)}`;
  const h = await dash.call('PUT', '/handle', { body: { handle } });
  if (h.status !== 200) throw new Error(h.text);
}, 120000);
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

function expectEnvelope(r: Reply, status: number, error: string) {
  expect({ status: r.status, ok: r.body?.ok, error: r.body?.error }).toEqual({ status, ok: false, error });
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
}
const count = async (table: string, where = 'true', params: unknown[] = []) =>
  (await sql(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params))[0].n as number;

describe('a lone UTF-16 surrogate in an email field (validator.isEmail threw: a 500)', () => {
  it('POST /api/v1/merchants {email: lone surrogate} → 400 invalid_request naming email', async () => {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey, body: { email: LONE } });
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'email' })]));
  });
  it('PATCH /dashboard/api/me {email: lone surrogate} → 400 invalid_request', async () => {
    expectEnvelope(await dash.call('PATCH', '/me', { body: { email: LONE } }), 400, 'invalid_request');
  });
  it('POST /dashboard/api/requests {customer_email: lone surrogate} → 400 invalid_request', async () => {
    expectEnvelope(await dash.call('POST', '/requests', { body: { fiat_amount_int: 100, customer_email: LONE } }), 400, 'invalid_request');
  });
  it('POST /dashboard/api/plans {payer_email: lone surrogate} → 400 invalid_request', async () => {
    const r = await dash.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 100, interval: 'month', payer_email: LONE } });
    expectEnvelope(r, 400, 'invalid_request');
  });
  it('POST /m/api/:handle/requests {customer_email: lone surrogate} (public, no auth) → 400 invalid_request', async () => {
    const r = await call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body: { fiat_amount_int: 100, customer_email: LONE } });
    expectEnvelope(r, 400, 'invalid_request');
  });
});

describe('the queue board, which runs no Nest guard, with a body it cannot read (it acted on an empty one: a job added, an audit row)', () => {
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;
  const board = (method: string, path: string, raw?: string) =>
    call(svc.adminUrl, method, `/admin/queues${path}`, { raw, headers: { authorization: basic, 'content-type': 'application/json' } });
  const boardRows = () => count('audit_events', `action = 'queue_board.action'`);
  const jobs = async () => (await board('GET', '/api/queues?activeQueue=webhooks&status=waiting')).body.queues.find((q: { name: string }) => q.name === 'webhooks').counts.waiting as number;

  it('POST /admin/queues/api/queues/webhooks/add with malformed JSON → 400 invalid_json, no job, no audit row', async () => {
    const [rows, waiting] = [await boardRows(), await jobs()];
    const r = await board('POST', '/api/queues/webhooks/add', '{"name":');
    expectEnvelope(r, 400, 'invalid_json');
    expect(await jobs()).toBe(waiting);
    expect(await boardRows()).toBe(rows);
  });

  it('POST /admin/queues/api/queues/webhooks/add with a body over 64 KiB → 413 payload_too_large, no job', async () => {
    const waiting = await jobs();
    const r = await board('POST', '/api/queues/webhooks/add', JSON.stringify({ name: 'x', data: { pad: 'y'.repeat(70 * 1024) } }));
    expectEnvelope(r, 413, 'payload_too_large');
    expect(await jobs()).toBe(waiting);
  });
});

describe('a NUL in a queue board path (the audit row could not store it: a 500)', () => {
  it('PUT /admin/queues/api/queues/webhooks/clean/%00 → the board answers; the trail keeps the path as sent', async () => {
    const r = await call(svc.adminUrl, 'PUT', '/admin/queues/api/queues/webhooks/clean/%00', {
      headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
    });
    expect(r.status).toBeLessThan(500);
    const rows = await sql(`SELECT details FROM audit_events WHERE action = 'queue_board.action' AND details->>'path' LIKE '%/clean/%'`);
    expect(rows.map((r: { details: unknown }) => r.details)).toEqual([{ method: 'PUT', path: '/admin/queues/api/queues/webhooks/clean/%00' }]);
  });

  it('a path whose 500th character, decoded, is the first half of an emoji: the board answers; the trail keeps the path as sent', async () => {
    const prefix = '/admin/queues/api/queues/webhooks/pause/';
    const path = `${prefix}${'x'.repeat(499 - prefix.length)}%F0%9F%98%80`;
    const r = await call(svc.adminUrl, 'PUT', path, { headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` } });
    expect(r.status).toBeLessThan(500);
    const rows = await sql(`SELECT details FROM audit_events WHERE action = 'queue_board.action' AND details->>'path' LIKE $1`, [`${prefix}x%`]);
    expect(rows.map((x: { details: unknown }) => x.details)).toEqual([{ method: 'PUT', path: path.slice(0, 500) }]);
  });
});

describe('a JSON null as the body (it read as {} and created a merchant)', () => {
  it('POST /api/v1/merchants with the body `null` → 400 invalid_request, no merchant (like [], "x" and 7)', async () => {
    const before = await count('merchants', 'partner_id = $1', [p.id]);
    const r = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey, raw: 'null' });
    expectEnvelope(r, 400, 'invalid_request');
    expect(await count('merchants', 'partner_id = $1', [p.id])).toBe(before);
  });
});

describe('a webhook URL on port 0 (stored, though no delivery could connect)', () => {
  it('PUT /admin/api/partners/:id/webhook {url: "https://93.184.216.34:0/"} → 400 invalid_request, nothing stored or audited', async () => {
    const before = await count('audit_events', `partner_id = $1 AND action = 'webhook.updated'`, [p.id]);
    const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'https://93.184.216.34:0/', enabled: false });
    expectEnvelope(r, 400, 'invalid_request');
    expect(await count('audit_events', `partner_id = $1 AND action = 'webhook.updated'`, [p.id])).toBe(before);
  });
});

describe('an unknown field named like a method of Object.prototype (class-transformer skips it: it was accepted and ignored)', () => {
  const NAMES = ['toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__'];

  it.each(NAMES)('POST /api/v1/requests/create {..., %s} → 400 invalid_request naming it, no request', async (name) => {
    const before = await count('payment_requests', 'merchant_id = $1', [merchantId]);
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
      key: p.testKey,
      body: { account_id: merchantId, fiat_amount_int: 100, [name]: 'x' },
    });
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual([{ field: name, message: `property ${name} should not exist` }]);
    expect(await count('payment_requests', 'merchant_id = $1', [merchantId])).toBe(before);
  });

  it('GET /api/v1/requests?valueOf=1 → 400 invalid_request, as ?foo=1 is', async () => {
    const r = await call(svc.publicUrl, 'GET', '/api/v1/requests?valueOf=1', { key: p.testKey });
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual([{ field: 'valueOf', message: 'property valueOf should not exist' }]);
  });

  it('PATCH /admin/api/partners/:id {name, toString} → 400, the name unchanged, nothing audited', async () => {
    const before = await count('audit_events', `partner_id = $1 AND action = 'partner.updated'`, [p.id]);
    const r = await admin(svc, 'PATCH', `/partners/${p.id}`, { name: 'Renamed', toString: 'x' });
    expectEnvelope(r, 400, 'invalid_request');
    expect((await admin(svc, 'GET', `/partners/${p.id}`)).body.name).toBe(`Partner ${p.slug}`);
    expect(await count('audit_events', `partner_id = $1 AND action = 'partner.updated'`, [p.id])).toBe(before);
  });

  it('PATCH /dashboard/api/me {display_name, hasOwnProperty} and POST /m/api/:handle/requests {..., valueOf} → 400', async () => {
    expectEnvelope(await dash.call('PATCH', '/me', { body: { display_name: 'Renamed', hasOwnProperty: 'x' } }), 400, 'invalid_request');
    expect((await dash.call('GET', '/me')).body.display_name).toBe('Test Shop');
    const r = await call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body: { fiat_amount_int: 100, valueOf: 1 } });
    expectEnvelope(r, 400, 'invalid_request');
  });
});

describe('a field sent to a route that takes none (it was accepted and ignored: a cancel with {"reason": …} cancelled)', () => {
  const STRAY = { reason: 'duplicate order' };
  const refused = (r: Reply) => {
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.errors).toEqual([{ field: 'reason', message: 'property reason should not exist' }]);
  };
  const statusOf = async (id: string) => (await sql(`SELECT status FROM payment_requests WHERE id = $1`, [id]))[0].status as string;
  const request = async () => {
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: merchantId, fiat_amount_int: 100 } });
    if (r.status !== 201) throw new Error(r.text);
    return r.body.request_id as string;
  };

  it('partner, dashboard and pay page: cancel and open refuse it and change nothing; without it they act', async () => {
    const id = await request();
    refused(await call(svc.publicUrl, 'POST', `/api/v1/requests/${id}/cancel`, { key: p.testKey, body: STRAY }));
    refused(await dash.call('POST', `/requests/${id}/cancel`, { body: STRAY }));
    refused(await call(svc.publicUrl, 'POST', `/pay/api/${id}/open`, { body: STRAY }));
    expect(await statusOf(id)).toBe('requested');
    expect((await call(svc.publicUrl, 'POST', `/api/v1/requests/${id}/cancel`, { key: p.testKey })).status).toBe(200);
    expect(await statusOf(id)).toBe('voided');
    const other = await request();
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${other}/open`, { body: {} })).status).toBe(200);
    expect(await statusOf(other)).toBe('opened');
  });

  it('dashboard: a plan action and the sign-out refuse it, the plan and the session unchanged', async () => {
    // Starting next year: no charge is due, so only an advance that acted would make one.
    const startAt = new Date(Date.now() + 365 * 86400_000).toISOString();
    const plan = await dash.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 100, interval: 'month', start_at: startAt } });
    expect(plan.status).toBe(201);
    for (const action of ['pause', 'cancel', 'advance']) refused(await dash.call('POST', `/plans/${plan.body.plan_id}/${action}`, { body: STRAY }));
    expect((await dash.call('GET', `/plans/${plan.body.plan_id}`)).body).toMatchObject({ status: 'active', charges_created: 0, charges: [] });
    refused(await dash.call('DELETE', '/session', { body: STRAY }));
    expect((await dash.call('GET', '/session')).status).toBe(200);
  });

  it('admin: merchant, key, webhook and delivery acts refuse it before anything is looked up; nothing changed or audited', async () => {
    const audited = () => count('audit_events', 'partner_id = $1', [p.id]);
    const before = await audited();
    const keys = (await admin(svc, 'GET', `/partners/${p.id}/keys`)).body.keys as Array<{ key_id: string; revoked_at: string | null }>;
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const path of [
      `/merchants/${merchantId}/disable`,
      `/merchants/${merchantId}/release-wallet`,
      `/partners/${p.id}/rates/refresh`,
      `/partners/${p.id}/webhook/rotate`,
      `/partners/${p.id}/webhook/confirm-rotation`,
      `/deliveries/${unknown}/redeliver`,
    ]) {
      refused(await admin(svc, 'POST', path, STRAY));
    }
    refused(await admin(svc, 'DELETE', `/partners/${p.id}/keys/${keys[0].key_id}`, STRAY));
    refused(await admin(svc, 'DELETE', `/partners/${p.id}/users/${unknown}`, STRAY));
    expect((await admin(svc, 'GET', `/partners/${p.id}/keys`)).body.keys).toEqual(keys);
    expect((await sql(`SELECT disabled, wallet_address IS NOT NULL AS has_wallet FROM merchants WHERE id = $1`, [merchantId]))[0]).toEqual({ disabled: false, has_wallet: true });
    expect(await audited()).toBe(before);
  });

  it('admin lists without filters refuse a query parameter, as the lists with filters do', async () => {
    for (const path of ['/rates', `/partners/${p.id}/keys`, `/partners/${p.id}/users`]) {
      const r = await admin(svc, 'GET', `${path}?reason=x`);
      refused(r);
      expect((await admin(svc, 'GET', path)).status).toBe(200);
    }
  });
});

it('a field failing two rules that share a message lists it once (POST /pay/api/:id/proof {tx_hash: 5} listed it twice)', async () => {
  const made = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: merchantId, fiat_amount_int: 100 } });
  const r = await call(svc.publicUrl, 'POST', `/pay/api/${made.body.request_id}/proof`, { body: { tx_hash: 5 } });
  expectEnvelope(r, 400, 'invalid_tx_hash');
  expect(r.body.errors).toEqual([{ field: 'tx_hash', message: 'tx_hash must be 0x plus 64 hex characters' }]);
});

it('a forbidden key in the query string is named (query), not (body)', async () => {
  const r = await call(svc.publicUrl, 'GET', '/api/v1/requests?__proto__=x', { key: p.testKey });
  expectEnvelope(r, 400, 'invalid_request');
  expect(r.body.errors).toEqual([{ field: '(query)', message: expect.stringContaining('not allowed as keys') }]);
});
