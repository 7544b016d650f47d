import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { Browser } from 'playwright-core';
import { ALL_QUEUES } from '../../src/common/queue/queues';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { launchBrowser } from '../support/browser';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';

/**
 * Issue 6 item 1: the BullMQ board at /admin/queues on the admin listener only, behind basic auth
 * (`admin` / ADMIN_TOKEN), showing every queue of the service; in Chromium too.
 */
let svc: TestService;
let browser: Browser | null = null;

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

beforeAll(async () => {
  svc = await startService();
});

afterAll(async () => {
  await browser?.close();
  await closeSql();
  await svc?.close();
});

describe('HTTP', () => {
  it.each([
    ['no credentials', undefined],
    ['a wrong password', basic('admin', `${ADMIN_TOKEN}x`)],
    ['a wrong user', basic('root', ADMIN_TOKEN)],
    ['a bearer token', `Bearer ${ADMIN_TOKEN}`],
    ['garbage', 'Basic !!!'],
  ])('refuses %s with 401 and a basic-auth challenge', async (_what, authorization) => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const r = await call(svc.adminUrl, 'GET', path, { headers: authorization ? { authorization } : {} });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic realm="queues"/);
      expect(r.text).not.toContain('queue');
    }
  });

  it('is not served on the public listener, even with the right credentials', async () => {
    const r = await call(svc.publicUrl, 'GET', '/admin/queues', { headers: { authorization: basic('admin', ADMIN_TOKEN) } });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ ok: false, error: 'not_found' });
  });

  it('serves the board and lists every queue of the service', async () => {
    const auth = { authorization: basic('admin', ADMIN_TOKEN) };
    const page = await call(svc.adminUrl, 'GET', '/admin/queues', { headers: auth });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('<base href="/admin/queues');
    expect(page.headers.get('x-powered-by')).toBeNull();

    const api = await call(svc.adminUrl, 'GET', '/admin/queues/api/queues', { headers: auth });
    expect(api.status).toBe(200);
    const names = (api.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    expect(names).toEqual([...ALL_QUEUES].sort());

    // Never framed (a click in a framed board is same-origin), never cached: the page, its API and a refusal alike.
    const refused = await call(svc.adminUrl, 'GET', '/admin/queues');
    expect(refused.status).toBe(401);
    for (const r of [page, api, refused]) {
      expect([r.headers.get('x-frame-options'), r.headers.get('content-security-policy'), r.headers.get('cache-control')]).toEqual(['DENY', "frame-ancestors 'none'", 'no-store']);
    }
  });
});

describe('cross-site requests (DESIGN §7: 415 unless application/json, 403 from another site)', () => {
  const auth = { authorization: basic('admin', ADMIN_TOKEN) };
  const queue = () => svc.app.get<Queue>(getQueueToken(ALL_QUEUES[0]), { strict: false });
  const add = `/admin/queues/api/queues/${ALL_QUEUES[0]}/add`;
  const job = JSON.stringify({ name: 'forged', data: {}, options: {} });

  it('a text/plain or form post with the operator’s credentials adds nothing; the board’s own JSON call does', async () => {
    const before = await queue().count();
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const r = await call(svc.adminUrl, 'POST', add, { headers: { ...auth, 'content-type': type }, raw: job });
      expect({ type, status: r.status, body: r.body }).toEqual({ type, status: 415, body: { ok: false, error: 'unsupported_media_type' } });
    }
    // An empty form post too: a browser form always names its type.
    const empty = await call(svc.adminUrl, 'POST', add, { headers: { ...auth, 'content-type': 'text/plain' }, raw: '' });
    expect(empty.status).toBe(415);
    expect(await queue().count()).toBe(before);

    const json = await call(svc.adminUrl, 'POST', add, { headers: auth, raw: job });
    expect(json.status).toBe(200);
    expect(await queue().count()).toBe(before + 1);
    await queue().drain();
  });

  it('stores each act in the audit trail (method and path, never the body); refused acts and reads store nothing', async () => {
    const acts = () => sql<{ actor_kind: string; client_address: string | null; partner_id: string | null; details: { method: string; path: string } }>(
      `SELECT actor_kind, client_address, partner_id, details FROM audit_events WHERE action = 'queue_board.action' ORDER BY at, id`);
    const before = (await acts()).length;
    expect((await call(svc.adminUrl, 'GET', '/admin/queues/api/queues', { headers: auth })).status).toBe(200);
    expect((await call(svc.adminUrl, 'POST', add, { headers: { ...auth, 'content-type': 'text/plain' }, raw: job })).status).toBe(415);
    expect((await call(svc.adminUrl, 'POST', add, { headers: { ...auth, origin: 'https://evil.example' } })).status).toBe(403);
    expect((await call(svc.adminUrl, 'POST', add, { headers: { authorization: basic('admin', 'wrong') }, raw: job })).status).toBe(401);
    expect((await acts()).length).toBe(before);

    const secretData = JSON.stringify({ name: 'audited', data: { note: 'job data stays out of the trail' }, options: {} });
    expect((await call(svc.adminUrl, 'POST', add, { headers: auth, raw: secretData })).status).toBe(200);
    const after = await acts();
    expect(after.slice(before)).toEqual([{
      actor_kind: 'admin', client_address: expect.stringMatching(/127\.0\.0\.1|::1/), partner_id: null,
      details: { method: 'POST', path: add },
    }]);
    expect(JSON.stringify(after)).not.toContain('job data stays out');
    // A path sent percent-encoded is stored as the board read it, so the trail is searchable by queue name.
    const name = ALL_QUEUES[0];
    const encoded = `/admin/queues/api/queues/%${name.charCodeAt(0).toString(16)}${name.slice(1)}/add`;
    expect((await call(svc.adminUrl, 'POST', encoded, { headers: auth, raw: job })).status).toBe(200);
    expect((await acts()).at(-1)!.details).toEqual({ method: 'POST', path: add });
    await queue().drain();
  });

  it('a request from another site acts on nothing, even without a body (no preflight: no-cors fetch, sendBeacon)', async () => {
    const before = await queue().count();
    const host = new URL(svc.adminUrl).host;
    for (const headers of [
      { origin: 'https://evil.example' } as Record<string, string>,
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: `http://${host}` },
    ]) {
      const r = await call(svc.adminUrl, 'POST', add, { headers: { ...auth, ...headers } });
      expect({ headers, status: r.status, body: r.body }).toEqual({ headers, status: 403, body: { ok: false, error: 'forbidden' } });
    }
    expect(await queue().count()).toBe(before);
    // The board's own page (same origin), and a client that is no browser, still act.
    const own = await call(svc.adminUrl, 'POST', add, { headers: { ...auth, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }, raw: job });
    expect(own.status).toBe(200);
    expect(await queue().count()).toBe(before + 1);
    await queue().drain();
  });

  it('still asks for credentials first', async () => {
    const r = await call(svc.adminUrl, 'POST', add, { headers: { 'content-type': 'text/plain' }, raw: job });
    expect(r.status).toBe(401);
  });
});

describe('in a browser', () => {
  it('loads with basic auth and shows the queues; refuses without it', async () => {
    browser = await launchBrowser();
    // Without credentials Chromium gets the 401 challenge and, having nothing to answer with, gives up.
    const refused = await browser.newContext();
    const bare = await refused.newPage();
    const statuses: number[] = [];
    bare.on('response', (res) => statuses.push(res.status()));
    const outcome = await bare.goto(`${svc.adminUrl}/admin/queues`).then((res) => String(res?.status()), (e: Error) => e.message);
    expect(outcome).toMatch(/401|ERR_INVALID_AUTH_CREDENTIALS/);
    expect(statuses).toContain(401);
    expect(statuses).not.toContain(200);
    await refused.close();

    const ctx = await browser.newContext({ httpCredentials: { username: 'admin', password: ADMIN_TOKEN } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const ok = await page.goto(`${svc.adminUrl}/admin/queues`);
    expect(ok?.status()).toBe(200);
    for (const name of ALL_QUEUES) {
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15000 });
    }
    expect(errors).toEqual([]);
    await ctx.close();
  }, 60000);
});
