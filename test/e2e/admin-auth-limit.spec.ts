import { request } from 'node:http';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { freshMinute } from '../support/clock';
import { closeSql, sql } from '../support/db';

/**
 * Failed admin authentication is limited per client address like the partner API's (AuthFailureLimiter):
 * bearer ADMIN_TOKEN on /admin/api/* and basic auth on the queue board share one budget of
 * AUTH_FAILURE_RATE_LIMIT wrong credentials a minute per address; past it the address gets 429 rate_limited
 * for the rest of the minute, a correct token included. The address is the admin listener's TCP peer, so the
 * calls below come from distinct loopback addresses (127.0.0.x), and forwarded headers move nothing.
 */
const FAILURES = 3;
let svc: TestService;

beforeAll(async () => {
  // TRUST_PROXY on loopback: X-Forwarded-For would be believed by req.ip; the admin limit must not use it.
  svc = await startService({ env: { AUTH_FAILURE_RATE_LIMIT: String(FAILURES), TRUST_PROXY: 'loopback' } });
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

interface Answer {
  status: number;
  body: any;
}

/** One call to `on`'s admin listener from the local address `from`. */
function admin(on: TestService, from: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const url = new URL(on.adminUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        localAddress: from,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode!, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` });
const LIMITED = { status: 429, body: { ok: false, error: 'rate_limited' } };
const UNAUTHORIZED = { status: 401, body: { ok: false, error: 'unauthorized' } };
const strip = (a: Answer) => ({ status: a.status, body: a.body });

it('admin API: past AUTH_FAILURE_RATE_LIMIT wrong tokens an address gets 429, a correct token too, for the rest of the minute', async () => {
  freshMinute();
  const from = '127.0.0.2';
  for (let i = 0; i < FAILURES; i++) {
    // A forwarded address changing on every call does not make a new client.
    const r = await admin(svc, from, 'GET', '/admin/api/rates', { ...bearer(`wrong-token-${i}`), 'x-forwarded-for': `198.51.100.${i + 1}` });
    expect({ call: i + 1, ...strip(r) }).toEqual({ call: i + 1, ...UNAUTHORIZED });
  }
  expect(strip(await admin(svc, from, 'GET', '/admin/api/rates', bearer('wrong-token-x')))).toEqual(LIMITED);

  // The correct token from that address is refused too, and does nothing.
  const slug = `limited-${Date.now().toString(36)}`;
  const create = await admin(svc, from, 'POST', '/admin/api/partners', bearer(ADMIN_TOKEN), { slug, name: 'Limited', default_currency: 'usd' });
  expect(strip(create)).toEqual(LIMITED);
  expect(await sql(`SELECT 1 FROM partners WHERE slug = $1`, [slug])).toEqual([]);
  // The queue board shares the budget: the same token guards both.
  expect(strip(await admin(svc, from, 'GET', '/admin/queues/api/queues', basic(ADMIN_TOKEN)))).toEqual(LIMITED);

  // Another address is not affected, wrong tokens there count on their own.
  expect((await admin(svc, '127.0.0.3', 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN))).status).toBe(200);
  expect(strip(await admin(svc, '127.0.0.3', 'GET', '/admin/api/rates', bearer('wrong-token')))).toEqual(UNAUTHORIZED);
  expect((await admin(svc, '127.0.0.3', 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN))).status).toBe(200);
});

it('queue board: past the budget of wrong passwords an address gets 429 on the board and on the admin API', async () => {
  freshMinute();
  const from = '127.0.0.4';
  for (let i = 0; i < FAILURES; i++) {
    const r = await admin(svc, from, 'GET', '/admin/queues/api/queues', basic(`wrong-password-${i}`));
    expect({ call: i + 1, status: r.status, body: r.body }).toEqual({ call: i + 1, ...UNAUTHORIZED });
  }
  expect(strip(await admin(svc, from, 'GET', '/admin/queues', basic(ADMIN_TOKEN)))).toEqual(LIMITED);
  expect(strip(await admin(svc, from, 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN)))).toEqual(LIMITED);
});

it('correct credentials and calls without any never count: an operator and a browser before its prompt are not limited', async () => {
  freshMinute();
  const from = '127.0.0.5';
  for (let i = 0; i < FAILURES + 2; i++) {
    expect((await admin(svc, from, 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN))).status).toBe(200);
    expect((await admin(svc, from, 'GET', '/admin/queues/api/queues', basic(ADMIN_TOKEN))).status).toBe(200);
    expect(strip(await admin(svc, from, 'GET', '/admin/api/rates'))).toEqual(UNAUTHORIZED);
    expect((await admin(svc, from, 'GET', '/admin/queues')).status).toBe(401);
  }
  expect((await admin(svc, from, 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN))).status).toBe(200);
});

it('an address limited through one instance is refused by every instance sharing its Redis', async () => {
  const other = await startService({ env: { AUTH_FAILURE_RATE_LIMIT: String(FAILURES), REDIS_PREFIX: svc.config.redisPrefix } });
  try {
    freshMinute();
    const from = '127.0.0.6';
    for (let i = 0; i < FAILURES; i++) expect((await admin(svc, from, 'GET', '/admin/api/rates', bearer('wrong-token'))).status).toBe(401);
    expect(strip(await admin(other, from, 'GET', '/admin/api/rates', bearer(ADMIN_TOKEN)))).toEqual(LIMITED);
    expect(strip(await admin(other, from, 'GET', '/admin/queues/api/queues', basic(ADMIN_TOKEN)))).toEqual(LIMITED);
  } finally {
    await other.close();
  }
});
