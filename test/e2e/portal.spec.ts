import { createHash, randomBytes } from 'node:crypto';
import { PAGE_CSP } from '../../src/modules/pages/page-security';
import {
  LOGIN_ATTEMPTS_PER_ADDRESS,
  LOGIN_DELAY_MAX_MS,
  LOGIN_FAILURE_BUDGET,
  LOGIN_FREE_FAILURES,
  PortalAuthService,
} from '../../src/modules/portal/portal-auth.service';
import { RedisConnections } from '../../src/common/redis/redis.module';
import { hashPassword, verifyPassword } from '../../src/modules/portal/password';
import { PortalUserRepository } from '../../src/modules/portal/portal-user.repository';
import { PortalUserRoles1764000004101 as Migration } from '../../migrations/1764000004101-portal-user-roles';
import { Client as PgClient } from 'pg';
import { DataSource } from 'typeorm';
import { EventOutbox } from '../../src/modules/webhooks/event-outbox';
import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { freshMinute } from '../support/clock';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { PortalClient as Client } from '../support/portal-client';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/**
 * The partner portal over plain HTTP (issue 6 item 2): partner users made by the admin API, sign-in that
 * does not tell unknown emails from wrong passwords, the session cookie's flags and its hashed row, CSRF
 * on every POST, sign-out, the sign-in rate limit, and the shared webhook update limit of DESIGN §3.
 * Browser-level flows are in test/browser/portal.spec.ts.
 */
let svc: TestService;
let partner: TestPartner;
const PASSWORD = 'correct horse battery staple';

/**
 * scrypt cost of this file's main service: 2^10 rather than the production 2^15, so the hundreds of hashes the
 * sign-in limits need take milliseconds each, not a tenth of a second. The default cost is checked on `secure`.
 */
const COST = 10;

beforeAll(async () => {
  svc = await startService({ env: { PORTAL_PASSWORD_COST: String(COST) } });
  partner = await createPartner(svc, { name: 'Acme <b>Payments</b> & "Co"' });
});

afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const client = (s: TestService = svc) => new Client(s.publicUrl);
const uniqueEmail = () => `user-${randomBytes(4).toString('hex')}@example.com`;

async function createUser(s: TestService, partnerId: string, email = uniqueEmail(), password = PASSWORD): Promise<string> {
  const r = await admin(s, 'POST', `/partners/${partnerId}/users`, { email, password });
  if (r.status !== 201) throw new Error(`user create failed: ${r.status} ${r.text}`);
  return email;
}

/** The text of the element with this id (tags stripped), to compare what a person reads. */
function textOf(page: string, id: string): string | null {
  const m = new RegExp(`id="${id}"[^>]*>([\\s\\S]*?)</div>`).exec(page);
  return m ? m[1].replace(/<[^>]+>/g, '').trim() : null;
}

describe('portal users through the admin API', () => {
  it('creates a user with a lower-cased email and an scrypt hash, and refuses duplicates and weak input', async () => {
    const email = `Mixed.${randomBytes(3).toString('hex')}@Example.COM`;
    const r = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email, password: PASSWORD });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ ok: true, user_id: expect.any(String), partner_id: partner.id, email: email.toLowerCase(), role: 'admin', created_at: expect.any(String) });
    expect(r.text).not.toContain(PASSWORD);
    const [row] = await sql(`SELECT email, password_hash FROM portal_users WHERE id = $1`, [r.body.user_id]);
    expect(row.email).toBe(email.toLowerCase());
    expect(row.password_hash).toMatch(new RegExp(`^\\$scrypt\\$ln=${COST},r=8,p=1\\$[A-Za-z0-9+/]{43}\\$[A-Za-z0-9+/]{43}$`));
    expect(await verifyPassword(PASSWORD, row.password_hash)).toBe(true);
    expect(await verifyPassword(`${PASSWORD}!`, row.password_hash)).toBe(false);

    const again = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: email.toUpperCase(), password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');

    const weak = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: uniqueEmail(), password: 'short' });
    expect(weak.status).toBe(400);
    expect(weak.body.errors).toEqual([{ field: 'password', message: 'password must be 12 to 200 characters' }]);
    const long = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: uniqueEmail(), password: 'x'.repeat(201) });
    expect(long.status).toBe(400);
    const badEmail = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: 'not an email', password: PASSWORD });
    expect(badEmail.body.errors).toEqual([expect.objectContaining({ field: 'email' })]);
    const extra = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: uniqueEmail(), password: PASSWORD, admin: true });
    expect(extra.status).toBe(400);
    const badRole = await admin(svc, 'POST', `/partners/${partner.id}/users`, { email: uniqueEmail(), password: PASSWORD, role: 'owner' });
    expect(badRole.status).toBe(400);
    expect(badRole.body.errors).toEqual([expect.objectContaining({ field: 'role' })]);
    const nobody = await admin(svc, 'POST', `/partners/00000000-0000-4000-8000-000000000000/users`, { email: uniqueEmail(), password: PASSWORD });
    expect(nobody.status).toBe(404);
    // Operator surface only: the public listener does not route /admin, and the token is required.
    expect((await call(svc.publicUrl, 'POST', `/admin/api/partners/${partner.id}/users`, { body: { email: uniqueEmail(), password: PASSWORD } })).status).toBe(404);
    expect((await call(svc.adminUrl, 'POST', `/admin/api/partners/${partner.id}/users`, { body: { email: uniqueEmail(), password: PASSWORD } })).status).toBe(401);
  });
});

describe('signing in', () => {
  it('sends anonymous visitors to the sign-in page, which has the pages CSP and no script', async () => {
    const c = client();
    const root = await c.get('/portal');
    expect(root.status).toBe(303);
    expect(root.location).toBe('/portal/login');
    expect((await c.get('/portal/keys')).location).toBe('/portal/login');
    const login = await c.get('/portal/login');
    expect(login.status).toBe(200);
    expect(login.headers.get('content-security-policy')).toBe(PAGE_CSP);
    expect(login.headers.get('cache-control')).toBe('no-store');
    expect(login.text).not.toMatch(/<script|style=/i);
    expect(c.cookies.get('prs_portal_login')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(login.setCookies[0]).toMatch(/; Path=\/portal\/login; HttpOnly; SameSite=Lax$/);
    // The portal is the public listener's: the admin listener 404s it.
    expect((await fetch(`${svc.adminUrl}/portal/login`)).status).toBe(404);
  });

  it('says the same thing for a wrong password and an unknown email, and sets no session', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    const wrong = await c.signIn(email, 'not the password at all');
    const unknown = await c.signIn(`nobody-${email}`, PASSWORD);
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(textOf(r.text, 'login-message')).toBe('Email or password is incorrect.');
      expect(r.setCookies.filter((s) => s.startsWith('prs_portal='))).toEqual([]);
    }
    // Apart from the email echoed into the field, the two pages are byte for byte the same.
    expect(wrong.text.replace(email, 'E')).toBe(unknown.text.replace(`nobody-${email}`, 'E'));
    expect(c.cookies.has('prs_portal')).toBe(false);
  });

  it('a hash of another cost is made again at the current one on a successful sign-in, never on a failed one', async () => {
    const email = await createUser(svc, partner.id);
    // As if hashed before PORTAL_PASSWORD_COST changed: until it is redone, a wrong password for this email costs
    // the old cost and an unknown email the current one, which a clock could tell apart.
    const old = await hashPassword(PASSWORD, COST + 1);
    await sql(`UPDATE portal_users SET password_hash = $2 WHERE email = $1`, [email, old]);
    const stored = async () => (await sql(`SELECT password_hash FROM portal_users WHERE email = $1`, [email]))[0].password_hash as string;

    expect((await client().signIn(email, 'not the password at all')).status).toBe(401);
    expect(await stored()).toBe(old);
    expect((await client().signIn(email, PASSWORD)).status).toBe(303);
    const now = await stored();
    expect(now).toMatch(new RegExp(`^\\$scrypt\\$ln=${COST},r=8,p=1\\$`));
    expect(await verifyPassword(PASSWORD, now)).toBe(true);
    expect((await client().signIn(email, PASSWORD)).status).toBe(303);
    expect(await stored()).toBe(now);

    // A re-hash decided on a hash that has since changed (a password change in between) changes nothing.
    const changed = await hashPassword('a brand new password', COST);
    await sql(`UPDATE portal_users SET password_hash = $2 WHERE email = $1`, [email, changed]);
    const [{ id }] = await sql(`SELECT id FROM portal_users WHERE email = $1`, [email]);
    await svc.app.get(PortalUserRepository).rehash(id, now, await hashPassword(PASSWORD, COST));
    expect(await stored()).toBe(changed);
  });

  it('two sign-ins at once on a hash of another cost both get in: one re-hashes, the other stands on the hash stored then', async () => {
    const email = await createUser(svc, partner.id);
    await sql(`UPDATE portal_users SET password_hash = $2 WHERE email = $1`, [email, await hashPassword(PASSWORD, COST + 1)]);
    const [a, b] = await Promise.all([client().signIn(email, PASSWORD), client().signIn(email, PASSWORD)]);
    expect([a.status, b.status]).toEqual([303, 303]);
  });

  it('starts a session on success: a random token in an HttpOnly, SameSite=Lax, /portal cookie, stored only hashed', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    const r = await c.signIn(email.toUpperCase(), PASSWORD);
    expect(r.status).toBe(303);
    expect(r.location).toBe('/portal');
    const cookie = r.setCookies.find((s) => s.startsWith('prs_portal='))!;
    expect(cookie).toMatch(/^prs_portal=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/portal; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    expect(cookie).not.toMatch(/Secure/i); // PUBLIC_URL is http here: local use
    const token = c.cookies.get('prs_portal')!;
    const rows = await sql(
      `SELECT s.id, s.csrf_token, s.expires_at - s.created_at AS ttl FROM portal_sessions s JOIN portal_users u ON u.id = s.user_id WHERE u.email = $1`,
      [email],
    );
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0].id).equals(createHash('sha256').update(token).digest())).toBe(true);
    expect(rows[0].ttl).toEqual({ hours: 12 });
    // The pre-session token is spent.
    expect(c.cookies.has('prs_portal_login')).toBe(false);

    const home = await c.get('/portal');
    expect(home.status).toBe(200);
    expect(home.text).toContain(`value="${rows[0].csrf_token}"`);
    // The partner's name is shown, escaped.
    expect(home.text).toContain('Acme &lt;b&gt;Payments&lt;/b&gt; &amp; &quot;Co&quot;');
    expect(home.text).not.toContain('<b>Payments</b>');
    // Signed in, the sign-in page sends the user home.
    expect((await c.get('/portal/login')).location).toBe('/portal');
  });

  it('marks the cookie Secure when PUBLIC_URL is https', async () => {
    const secure = await startService({ env: { PUBLIC_URL: 'https://portal.example.test' } });
    try {
      const p = await createPartner(secure);
      const email = await createUser(secure, p.id);
      // A service with the default cost stores scrypt at N = 2^15, r = 8, p = 1.
      const [row] = await sql(`SELECT password_hash FROM portal_users WHERE email = lower($1)`, [email]);
      expect(row.password_hash).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{43}\$[A-Za-z0-9+/]{43}$/);
      const c = client(secure);
      const login = await c.get('/portal/login');
      expect(login.setCookies[0]).toMatch(/; Secure; SameSite=Lax$/);
      const r = await c.signIn(email, PASSWORD);
      expect(r.setCookies.find((s) => s.startsWith('prs_portal='))).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
    } finally {
      await secure.close();
    }
  });

  it('refuses a sign-in whose form token does not match the browser’s (login CSRF)', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    await c.get('/portal/login');
    const forged = await c.post('/portal/login', { _csrf: randomBytes(32).toString('base64url'), email, password: PASSWORD });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain('This form has expired');
    const bare = await client().post('/portal/login', { email, password: PASSWORD });
    expect(bare.status).toBe(403);
    expect(c.cookies.has('prs_portal')).toBe(false);
  });

  it('treats an expired session as none', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    await c.signIn(email, PASSWORD);
    expect((await c.get('/portal')).status).toBe(200);
    await sql(`UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE user_id = (SELECT id FROM portal_users WHERE email = $1)`, [email]);
    const r = await c.get('/portal');
    expect(r.status).toBe(303);
    expect(r.location).toBe('/portal/login');
  });
});

describe('CSRF on every POST', () => {
  let c: Client;
  let csrf: string;

  beforeAll(async () => {
    c = client();
    await c.signIn(await createUser(svc, partner.id), PASSWORD);
    csrf = await c.csrf('/portal/keys');
  });

  const keyCount = async () => Number((await sql(`SELECT count(*) FROM api_keys WHERE partner_id = $1`, [partner.id]))[0].count);

  it.each([
    ['missing', undefined],
    ['wrong', randomBytes(32).toString('base64url')],
    ['empty', ''],
  ])('refuses a %s token with 403 and changes nothing', async (_, token) => {
    const before = await keyCount();
    const form = { mode: 'test', scopes: ['requests:read'], ...(token === undefined ? {} : { _csrf: token }) };
    const r = await c.post('/portal/keys', form);
    expect(r.status).toBe(403);
    expect(r.headers.get('content-security-policy')).toBe(PAGE_CSP);
    expect(r.text).toContain('This form has expired');
    expect(r.text).not.toMatch(/prs_(test|live)_/);
    expect(await keyCount()).toBe(before);

    const hook = await c.post('/portal/webhook', { url: 'http://127.0.0.1:9/hook', enabled: 'on', ...(token === undefined ? {} : { _csrf: token }) });
    expect(hook.status).toBe(403);
    const [p] = await sql(`SELECT e.url AS webhook_url FROM partners p LEFT JOIN webhook_endpoints e ON e.partner_id = p.id WHERE p.id = $1`, [partner.id]);
    expect(p.webhook_url).toBeNull();
    expect((await c.post('/portal/logout', token === undefined ? {} : { _csrf: token })).status).toBe(403);
    expect((await c.get('/portal')).status).toBe(200); // still signed in
  });

  it('refuses another session’s token', async () => {
    const other = client();
    await other.signIn(await createUser(svc, partner.id), PASSWORD);
    const otherToken = await other.csrf('/portal/keys');
    const before = await keyCount();
    expect((await c.post('/portal/keys', { _csrf: otherToken, mode: 'test', scopes: ['requests:read'] })).status).toBe(403);
    expect(await keyCount()).toBe(before);
  });

  it('accepts the session’s own token', async () => {
    const before = await keyCount();
    const r = await c.post('/portal/keys', { _csrf: csrf, mode: 'live', scopes: ['requests:read', 'merchants:read'], label: 'backend' });
    expect(r.status).toBe(201);
    const key = /id="new-api-key" value="(prs_live_[A-Za-z0-9_-]{43})"/.exec(r.text)![1];
    expect(await keyCount()).toBe(before + 1);
    const listed = await call(svc.publicUrl, 'GET', '/api/v1/merchants', { key });
    expect(listed.status).toBe(200);
    const denied = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key, body: {} });
    expect(denied.status).toBe(403);
    // Shown once: the list shows the prefix only.
    const list = await c.get('/portal/keys');
    expect(list.text).not.toContain(key);
    expect(list.text).toContain(`${key.slice(0, 'prs_live_'.length + 6)}…`);
  });
});

describe('form text Postgres cannot store', () => {
  // A NUL: text columns refuse it (the insert failed, a 500). The API refuses it in JSON bodies; a portal form is
  // read by its own parser, and must too.
  it.each([
    ['a key label with a NUL', '/portal/keys', { mode: 'test', scopes: ['requests:read'], label: 'back\u0000end' }],
    ['a webhook URL with a NUL', '/portal/webhook', { url: 'http://127.0.0.1:9/ho\u0000ok', enabled: 'on' }],
    ['an invited email with a NUL', '/portal/users', { email: 'new\u0000user@example.com', password: PASSWORD, role: 'member' }],
  ])('%s → 400 in words, nothing stored', async (_, path, form) => {
    const c = client();
    await c.signIn(await createUser(svc, partner.id), PASSWORD);
    const csrf = await c.csrf('/portal/keys');
    const before = await sql(`SELECT (SELECT count(*)::int FROM api_keys WHERE partner_id = $1) AS keys,
                                     (SELECT count(*)::int FROM portal_users WHERE partner_id = $1) AS users,
                                     (SELECT url FROM webhook_endpoints WHERE partner_id = $1) AS url`, [partner.id]);
    const r = await c.post(path, { _csrf: csrf, ...form });
    expect(r.status).toBe(400);
    expect(r.text).toContain('That form could not be read');
    expect(await sql(`SELECT (SELECT count(*)::int FROM api_keys WHERE partner_id = $1) AS keys,
                             (SELECT count(*)::int FROM portal_users WHERE partner_id = $1) AS users,
                             (SELECT url FROM webhook_endpoints WHERE partner_id = $1) AS url`, [partner.id])).toEqual(before);
  });

  // The same fields in a body that is not a form used to be read as JSON, past the text check: a 500.
  it.each([
    ['application/json', (f: Record<string, unknown>) => JSON.stringify(f)],
    ['text/plain', (f: Record<string, unknown>) => JSON.stringify(f)],
    ['multipart/form-data; boundary=x', (f: Record<string, unknown>) => `--x\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${f._csrf}\r\n--x--\r\n`],
  ])('a body sent as %s is not read: 415 in words, nothing stored', async (type, encode) => {
    const c = client();
    await c.signIn(await createUser(svc, partner.id), PASSWORD);
    const csrf = await c.csrf('/portal/keys');
    const keys = async () => (await sql(`SELECT count(*)::int AS n FROM api_keys WHERE partner_id = $1`, [partner.id]))[0].n;
    const before = await keys();
    const r = await fetch(`${svc.publicUrl}/portal/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': type },
      body: encode({ _csrf: csrf, mode: 'test', scopes: ['requests:read'], label: 'back\u0000end' }),
    });
    expect(r.status).toBe(415);
    expect(await r.text()).toContain('Only forms are accepted');
    expect(await keys()).toBe(before);
    // Signed out, the sign-in form refuses it too, before any lookup.
    const anonymous = client();
    const token = await anonymous.csrf('/portal/login');
    const login = await fetch(`${svc.publicUrl}/portal/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: [...anonymous.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': type },
      body: encode({ _csrf: token, email: 'some\u0000one@example.com', password: PASSWORD }),
    });
    expect([403, 415]).toContain(login.status);
  });

  it('a sign-in with a NUL in the email is a 400, before any lookup', async () => {
    const c = client();
    const token = await c.csrf('/portal/login');
    const r = await c.post('/portal/login', { _csrf: token, email: 'some\u0000one@example.com', password: PASSWORD });
    expect(r.status).toBe(400);
    expect(c.cookies.has('prs_portal')).toBe(false);
  });
});

describe('signing out', () => {
  it('deletes the session and clears the cookie; the old cookie no longer works', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    await c.signIn(email, PASSWORD);
    const token = c.cookies.get('prs_portal')!;
    const csrf = await c.csrf('/portal');
    const out = await c.post('/portal/logout', { _csrf: csrf });
    expect(out.status).toBe(303);
    expect(out.location).toBe('/portal/login?done=signed-out');
    expect(out.setCookies.find((s) => s.startsWith('prs_portal='))).toMatch(/^prs_portal=; Path=\/portal; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax$/);
    expect(await sql(`SELECT 1 FROM portal_sessions WHERE id = $1`, [createHash('sha256').update(token).digest()])).toEqual([]);
    const replay = new Client(svc.publicUrl);
    replay.cookies.set('prs_portal', token);
    expect((await replay.get('/portal')).location).toBe('/portal/login');
    expect((await c.get('/portal/login?done=signed-out')).text).toContain('You are signed out.');
  });
});

describe('sign-in rate limit', () => {
  it('allows 10 attempts a minute from one address, then answers 429 even to the right password', async () => {
    // A service of its own: its Redis prefix keeps these counters away from the other tests' sign-ins.
    const limited = await startService({ env: { PORTAL_PASSWORD_COST: String(COST) } });
    try {
      const p = await createPartner(limited);
      const email = await createUser(limited, p.id);
      freshMinute();
      const c = client(limited);
      for (let i = 0; i < 10; i++) expect((await c.signIn(email, `wrong password ${i}`)).status).toBe(401);
      const eleventh = await c.signIn(email, PASSWORD);
      expect(eleventh.status).toBe(429);
      expect(eleventh.text).toContain('Too many sign-in attempts');
      expect(eleventh.headers.get('content-security-policy')).toBe(PAGE_CSP);
      expect(c.cookies.has('prs_portal')).toBe(false);
    } finally {
      await limited.close();
    }
  });

  it('slows an email hammered from many addresses down instead of locking its owner out (issue 10 point 9)', async () => {
    const auth = svc.app.get(PortalAuthService);
    const email = await createUser(svc, partner.id);
    const usual = '198.51.100.50';
    const session = { token: expect.any(String) };
    // The owner has signed in from their usual address before.
    expect(await auth.signIn(usual, email, PASSWORD)).toEqual(session);
    // An attacker fails LOGIN_FREE_FAILURES + 10 times on this email, each attempt from another address.
    const burst = (n: number, offset: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => auth.signIn(`2001:db8:${(offset + i).toString(16)}::1`, email, `wrong password ${i}`)));
    expect(await burst(LOGIN_FREE_FAILURES + 10, 0)).toEqual(Array(LOGIN_FREE_FAILURES + 10).fill(null));

    // A new address waits the longest delay, but the right password still works: no lockout.
    let t = Date.now();
    expect(await auth.signIn('203.0.113.77', email, PASSWORD)).toEqual(session);
    expect(Date.now() - t).toBeGreaterThanOrEqual(LOGIN_DELAY_MAX_MS - 100);
    // The owner's usual address does not wait at all.
    t = Date.now();
    expect(await auth.signIn(usual, email, PASSWORD)).toEqual(session);
    expect(Date.now() - t).toBeLessThan(LOGIN_DELAY_MAX_MS / 2);

    // Past the budget, new addresses are refused for this email; the owner's usual address still signs in.
    expect(await burst(LOGIN_FAILURE_BUDGET, 1000)).toEqual(expect.arrayContaining([null]));
    await expect(auth.signIn('203.0.113.78', email, PASSWORD)).rejects.toMatchObject({ code: 'rate_limited' });
    expect(await auth.signIn(usual, email, PASSWORD)).toEqual(session);
    // Another account from a fresh address is unaffected.
    const other = await createUser(svc, partner.id);
    expect(await auth.signIn('198.51.100.201', other.toUpperCase(), PASSWORD)).toEqual(session);
    // ~115 real scrypt hashes: seconds on a quiet machine, minutes on a loaded one.
  }, 300000);

  it("keeps the owner's usual address exempt after Redis lost the memory of it (the audit trail's sign-ins)", async () => {
    const auth = svc.app.get(PortalAuthService);
    const redis = svc.app.get(RedisConnections);
    const email = await createUser(svc, partner.id);
    const usual = '2001:db8:5eed:7::10';
    const session = { token: expect.any(String) };
    expect(await auth.signIn(usual, email, PASSWORD)).toEqual(session);
    // Redis loses what it knew of sign-in addresses (a restart without persistence, a flush); the audit rows stay.
    const known = await redis.main.keys(`${redis.channel('portal-login-known')}:*`);
    expect(known.length).toBeGreaterThan(0);
    await redis.main.del(...known);
    // An attacker spends the email's whole budget from other addresses.
    const n = LOGIN_FAILURE_BUDGET + 1;
    expect(await Promise.all(Array.from({ length: n }, (_, i) => auth.signIn(`198.51.100.${(i % 250) + 1}`, email, `wrong ${i}`)))).toEqual(
      expect.arrayContaining([null]),
    );
    await expect(auth.signIn('203.0.113.90', email, PASSWORD)).rejects.toMatchObject({ code: 'rate_limited' });
    // The owner, from another address of the same /64, signs in without waiting, and Redis remembers it again.
    const t = Date.now();
    expect(await auth.signIn('2001:db8:5eed:7::beef', email, PASSWORD)).toEqual(session);
    expect(Date.now() - t).toBeLessThan(LOGIN_DELAY_MAX_MS / 2);
    expect((await redis.main.keys(`${redis.channel('portal-login-known')}:*`)).length).toBeGreaterThan(0);
  }, 300000);

  it('an unknown email under attack costs the same reads as a known one (no clock tells them apart)', async () => {
    const auth = svc.app.get(PortalAuthService);
    const known = await createUser(svc, partner.id);
    const unknown = uniqueEmail();
    // Both emails past their free failures, from an address of their own.
    for (const email of [known, unknown]) {
      for (let i = 0; i <= LOGIN_FREE_FAILURES; i++) expect(await auth.signIn('192.0.2.71', email, `wrong ${i}`)).toBeNull();
    }
    // With audit_events locked, a sign-in that reads the trail waits for the lock.
    const locker = new PgClient({ connectionString: testEnv().databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE');
      const [{ pid }] = (await locker.query('SELECT pg_backend_pid() AS pid')).rows;
      const fromKnown = auth.signIn('192.0.2.72', known, 'wrong again');
      const fromUnknown = auth.signIn('192.0.2.72', unknown, 'wrong again');
      // The known email's attempt reads the owner's sign-ins; the unknown one's must do the same work: both
      // wait for the lock (an attempt that skipped the read would be answered meanwhile, and never wait).
      await waitFor(async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length === 2, 10_000);
      await locker.query('ROLLBACK');
      expect(await Promise.all([fromKnown, fromUnknown])).toEqual([null, null]);
    } finally {
      await locker.end();
    }
  }, 60000);

  it('counts an IPv6 client by its /64 for the per-address limit', async () => {
    const auth = svc.app.get(PortalAuthService);
    freshMinute();
    const emails = await Promise.all(Array.from({ length: 3 }, () => createUser(svc, partner.id)));
    // LOGIN_ATTEMPTS_PER_ADDRESS attempts from one /64, spread over addresses and emails, then 429 for that /64.
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_ADDRESS; i++) {
      expect(await auth.signIn(`2001:db8:feed:1::${(i + 1).toString(16)}`, emails[i % 3], PASSWORD)).toEqual({ token: expect.any(String) });
    }
    await expect(auth.signIn('2001:db8:feed:1:ffff::1', emails[0], PASSWORD)).rejects.toMatchObject({ code: 'rate_limited' });
    expect(await auth.signIn('2001:db8:feed:2::1', emails[0], PASSWORD)).toEqual({ token: expect.any(String) });
  }, 60000);
});

describe('the webhook update limit counts portal and admin changes together (DESIGN §3)', () => {
  it('refuses the 11th change of a minute whichever surface makes it', async () => {
    const p = await createPartner(svc);
    const c = client();
    await c.signIn(await createUser(svc, p.id), PASSWORD);
    const csrf = await c.csrf('/portal/webhook');
    freshMinute();
    for (let i = 0; i < 5; i++) {
      const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: `http://127.0.0.1:9/admin-${i}`, enabled: false });
      expect(r.status).toBe(200);
    }
    for (let i = 0; i < 5; i++) {
      const r = await c.post('/portal/webhook', { _csrf: csrf, url: `http://127.0.0.1:9/portal-${i}` });
      expect(r.status).toBe(303);
    }
    const eleventh = await c.post('/portal/webhook', { _csrf: csrf, url: 'http://127.0.0.1:9/too-many', enabled: 'on' });
    expect(eleventh.status).toBe(429);
    expect(textOf(eleventh.text, 'notice')).toContain('at most 10 webhook URL or secret changes per minute');
    const rotate = await c.post('/portal/webhook/rotate', { _csrf: csrf });
    expect(rotate.status).toBe(429);
    expect((await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'http://127.0.0.1:9/admin-late', enabled: true })).status).toBe(429);
    const [row] = await sql(`SELECT url AS webhook_url, enabled AS webhook_enabled, previous_secret AS webhook_previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [p.id]);
    expect(row).toEqual({ webhook_url: 'http://127.0.0.1:9/portal-4', webhook_enabled: false, webhook_previous_secret: null });
  });
});

describe('partner isolation', () => {
  it('shows another partner’s delivery and key as not found', async () => {
    const other = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, other.testKey);
    const req = await mustCreateRequest(svc, other.testKey, { account_id: m.id, fiat_amount_int: 1234 });
    const ev = await svc.app.get(DataSource).transaction((em) =>
      svc.app.get(EventOutbox).record(em, { partnerId: other.id, requestId: req.request_id, event: 'payment.proof_attached', testMode: true }),
    );
    const c = client();
    await c.signIn(await createUser(svc, partner.id), PASSWORD);
    const csrf = await c.csrf('/portal/keys');
    const [otherKey] = await sql(`SELECT id FROM api_keys WHERE partner_id = $1 LIMIT 1`, [other.id]);
    const revoke = await c.post(`/portal/keys/${otherKey.id}/revoke`, { _csrf: csrf });
    expect(revoke.status).toBe(404);
    expect(revoke.text).toContain('Not found');
    expect((await sql(`SELECT revoked_at FROM api_keys WHERE id = $1`, [otherKey.id]))[0].revoked_at).toBeNull();
    expect((await c.get(`/portal/deliveries/${ev.id}`)).status).toBe(404);
    expect((await c.post(`/portal/deliveries/${ev.id}/redeliver`, { _csrf: csrf })).status).toBe(404);
    expect((await c.get('/portal/deliveries/not-a-uuid')).status).toBe(404);
    expect((await c.get('/portal/no-such-page')).status).toBe(404);
  });
});

describe('portal accounts (issue 10 point 10)', () => {
  const userIdOf = async (email: string): Promise<string> => (await sql(`SELECT id FROM portal_users WHERE email = $1`, [email]))[0].id;
  const sessionsOf = async (email: string): Promise<number> =>
    Number((await sql(`SELECT count(*) FROM portal_sessions s JOIN portal_users u ON u.id = s.user_id WHERE u.email = $1`, [email]))[0].count);
  const signedIn = async (c: Client) => (await c.get('/portal')).status === 200;
  const invite = (c: Client, csrf: string, form: Record<string, string>) => c.post('/portal/users', { _csrf: csrf, ...form });

  it('existing users become admins when the roles migration runs; new ones need a role', async () => {
    const runner = svc.app.get(DataSource).createQueryRunner();
    const p = await createPartner(svc);
    try {
      await new Migration().down(runner);
      await sql(`INSERT INTO portal_users (partner_id, email, password_hash) VALUES ($1, $2, 'x')`, [p.id, `old-${uniqueEmail()}`]);
      await new Migration().up(runner);
    } finally {
      await runner.release();
    }
    expect(await sql(`SELECT role FROM portal_users WHERE partner_id = $1`, [p.id])).toEqual([{ role: 'admin' }]);
    await expect(sql(`INSERT INTO portal_users (partner_id, email, password_hash) VALUES ($1, $2, 'x')`, [p.id, uniqueEmail()])).rejects.toThrow(/role/);
    await expect(sql(`INSERT INTO portal_users (partner_id, email, password_hash, role) VALUES ($1, $2, 'x', 'owner')`, [p.id, uniqueEmail()])).rejects.toThrow(/portal_users_role_check/);
  });

  it('admin API: lists a partner’s users, removes one (ending their sessions), never the last admin', async () => {
    const p = await createPartner(svc);
    const first = await admin(svc, 'POST', `/partners/${p.id}/users`, { email: uniqueEmail(), password: PASSWORD });
    const member = await admin(svc, 'POST', `/partners/${p.id}/users`, { email: uniqueEmail(), password: PASSWORD, role: 'member' });
    expect([first.body.role, member.body.role]).toEqual(['admin', 'member']);

    const listed = await admin(svc, 'GET', `/partners/${p.id}/users`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      ok: true,
      users: [
        { user_id: first.body.user_id, partner_id: p.id, email: first.body.email, role: 'admin', created_at: first.body.created_at },
        { user_id: member.body.user_id, partner_id: p.id, email: member.body.email, role: 'member', created_at: member.body.created_at },
      ],
    });
    expect(listed.text).not.toMatch(/password|scrypt/);

    // The member is signed in; removing them ends that session at once.
    const c = client();
    await c.signIn(member.body.email, PASSWORD);
    expect(await signedIn(c)).toBe(true);
    const removed = await admin(svc, 'DELETE', `/partners/${p.id}/users/${member.body.user_id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ ok: true, user_id: member.body.user_id, removed: true });
    expect(await sessionsOf(member.body.email)).toBe(0);
    expect((await c.get('/portal')).location).toBe('/portal/login');
    expect((await client().signIn(member.body.email, PASSWORD)).status).toBe(401);
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/users/${member.body.user_id}`)).status).toBe(404);

    // The last admin stays, in words.
    const last = await admin(svc, 'DELETE', `/partners/${p.id}/users/${first.body.user_id}`);
    expect(last.status).toBe(409);
    expect(last.body).toEqual({ ok: false, error: 'conflict', errors: [{ field: 'user_id', message: expect.stringContaining('last admin') }] });
    expect((await admin(svc, 'GET', `/partners/${p.id}/users`)).body.users).toHaveLength(1);

    // Another partner's user, an unknown partner, a malformed id: 404, nothing removed.
    expect((await admin(svc, 'DELETE', `/partners/${partner.id}/users/${first.body.user_id}`)).status).toBe(404);
    expect((await admin(svc, 'GET', `/partners/00000000-0000-4000-8000-000000000000/users`)).status).toBe(404);
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/users/not-a-uuid`)).status).toBe(404);
    expect((await sql(`SELECT 1 FROM portal_users WHERE id = $1`, [first.body.user_id])).length).toBe(1);
    // Operator surface only.
    expect((await call(svc.adminUrl, 'GET', `/admin/api/partners/${p.id}/users`)).status).toBe(401);
    expect((await call(svc.publicUrl, 'GET', `/admin/api/partners/${p.id}/users`)).status).toBe(404);
  });

  it('changes the password with the current one, ending the user’s other sessions and keeping this one', async () => {
    const email = await createUser(svc, partner.id);
    const here = client();
    const elsewhere = client();
    await here.signIn(email, PASSWORD);
    await elsewhere.signIn(email, PASSWORD);
    const csrf = await here.csrf('/portal/account');
    const [{ password_hash: before }] = await sql(`SELECT password_hash FROM portal_users WHERE email = lower($1)`, [email]);
    const NEW = 'a brand new passphrase';

    // Refusals, in words, change nothing.
    const refusals: Array<[Record<string, string>, string]> = [
      [{ current_password: 'not the password', new_password: NEW, new_password_repeat: NEW }, 'The current password is not correct.'],
      [{ current_password: PASSWORD, new_password: 'short', new_password_repeat: 'short' }, 'The new password must be 12 to 200 characters.'],
      [{ current_password: PASSWORD, new_password: NEW, new_password_repeat: `${NEW}!` }, 'The new password and its repetition differ.'],
    ];
    for (const [form, words] of refusals) {
      const r = await here.post('/portal/account/password', { _csrf: csrf, ...form });
      expect(r.status).toBe(400);
      expect(textOf(r.text, 'notice')).toBe(`Your password was not changed:${words}`);
      expect(r.headers.get('content-security-policy')).toBe(PAGE_CSP);
    }
    const forged = await here.post('/portal/account/password', { current_password: PASSWORD, new_password: NEW, new_password_repeat: NEW });
    expect(forged.status).toBe(403);
    expect((await sql(`SELECT password_hash FROM portal_users WHERE email = $1`, [email]))[0].password_hash).toBe(before);
    expect(await signedIn(elsewhere)).toBe(true);

    const ok = await here.post('/portal/account/password', { _csrf: csrf, current_password: PASSWORD, new_password: NEW, new_password_repeat: NEW });
    expect(ok.status).toBe(303);
    expect(ok.location).toBe('/portal/account?done=password-changed');
    expect(textOf((await here.get(ok.location!)).text, 'notice')).toContain('Your password was changed.');
    expect(await signedIn(here)).toBe(true);
    expect((await elsewhere.get('/portal')).location).toBe('/portal/login');
    expect(await sessionsOf(email)).toBe(1);
    expect((await client().signIn(email, PASSWORD)).status).toBe(401);
    expect((await client().signIn(email, NEW)).status).toBe(303);
  });

  it('ends a session after an hour without activity, while activity keeps it going', async () => {
    const email = await createUser(svc, partner.id);
    const c = client();
    await c.signIn(email, PASSWORD);
    const userId = await userIdOf(email);
    await sql(`UPDATE portal_sessions SET last_seen_at = now() - interval '59 minutes' WHERE user_id = $1`, [userId]);
    expect(await signedIn(c)).toBe(true);
    // That visit counted as activity.
    const [{ idle }] = await sql(`SELECT extract(epoch FROM now() - last_seen_at) AS idle FROM portal_sessions WHERE user_id = $1`, [userId]);
    expect(Number(idle)).toBeLessThan(60);
    await sql(`UPDATE portal_sessions SET last_seen_at = now() - interval '61 minutes' WHERE user_id = $1`, [userId]);
    const r = await c.get('/portal/keys');
    expect(r.status).toBe(303);
    expect(r.location).toBe('/portal/login');
    // The next sign-in sweeps the idle row.
    await client().signIn(email, PASSWORD);
    expect(await sessionsOf(email)).toBe(1);
  });

  it('lets the partner’s admins list, invite and remove users in the portal; members get 403 in words', async () => {
    const p = await createPartner(svc);
    const adminEmail = await createUser(svc, p.id);
    const boss = client();
    await boss.signIn(adminEmail, PASSWORD);
    const home = await boss.get('/portal');
    expect(home.text).toContain('href="/portal/users"');
    const csrf = await boss.csrf('/portal/users');
    const countUsers = async () => Number((await sql(`SELECT count(*) FROM portal_users WHERE partner_id = $1`, [p.id]))[0].count);

    // Bad invitations are refused in words and create nothing.
    const short = await invite(boss, csrf, { email: uniqueEmail(), password: 'short', role: 'member' });
    expect(short.status).toBe(400);
    expect(textOf(short.text, 'notice')).toBe('The user was not added:password must be 12 to 200 characters');
    const taken = await invite(boss, csrf, { email: adminEmail.toUpperCase(), password: PASSWORD, role: 'member' });
    expect(taken.status).toBe(409);
    expect(textOf(taken.text, 'notice')).toBe('The user was not added:a portal user with this email exists');
    expect((await invite(boss, csrf, { email: uniqueEmail(), password: PASSWORD, role: 'owner' })).status).toBe(400);
    expect((await boss.post('/portal/users', { email: uniqueEmail(), password: PASSWORD, role: 'member' })).status).toBe(403);
    expect(await countUsers()).toBe(1);

    // Invite a member, who signs in with the initial password.
    const memberEmail = uniqueEmail();
    const added = await invite(boss, csrf, { email: memberEmail, password: PASSWORD, role: 'member' });
    expect(added.status).toBe(303);
    expect(added.location).toBe('/portal/users?done=user-invited');
    const page = await boss.get('/portal/users');
    expect(page.text).toContain(memberEmail);
    expect(page.text).not.toMatch(/scrypt/);
    const member = client();
    expect((await member.signIn(memberEmail, PASSWORD)).status).toBe(303);

    // A member has no user management: not in the navigation, and 403 in words on every route of it.
    expect((await member.get('/portal')).text).not.toContain('href="/portal/users"');
    const memberCsrf = await member.csrf('/portal/account');
    const denied = await member.get('/portal/users');
    expect(denied.status).toBe(403);
    expect(denied.text).toContain('Only admins can manage users');
    const adminId = await userIdOf(adminEmail);
    for (const [path, form] of [
      ['/portal/users', { email: uniqueEmail(), password: PASSWORD, role: 'admin' }],
      [`/portal/users/${adminId}/remove`, {}],
      [`/portal/users/${adminId}/role`, { role: 'member' }],
    ] as const) {
      const r = await member.post(path, { _csrf: memberCsrf, ...form });
      expect(r.status).toBe(403);
      expect(r.text).toContain('Only admins can manage users');
    }
    expect(await countUsers()).toBe(2);
    expect((await sql(`SELECT role FROM portal_users WHERE id = $1`, [adminId]))[0].role).toBe('admin');

    // The admin cannot remove themself, nor (being the last admin) become a member.
    const self = await boss.post(`/portal/users/${adminId}/remove`, { _csrf: csrf });
    expect(self.status).toBe(409);
    expect(textOf(self.text, 'notice')).toBe('The user was not removed:you cannot remove yourself; another admin can');
    const demote = await boss.post(`/portal/users/${adminId}/role`, { _csrf: csrf, role: 'member' });
    expect(demote.status).toBe(409);
    expect(textOf(demote.text, 'notice')).toContain('the last admin cannot become a member');

    // Removing the member ends their session.
    const memberId = await userIdOf(memberEmail);
    const gone = await boss.post(`/portal/users/${memberId}/remove`, { _csrf: csrf });
    expect(gone.status).toBe(303);
    expect(gone.location).toBe('/portal/users?done=user-removed');
    expect((await member.get('/portal')).location).toBe('/portal/login');
    expect(await countUsers()).toBe(1);
    // Another partner's user is not found from here.
    const outsider = await userIdOf(await createUser(svc, partner.id));
    expect((await boss.post(`/portal/users/${outsider}/remove`, { _csrf: csrf })).status).toBe(404);
    expect((await sql(`SELECT 1 FROM portal_users WHERE id = $1`, [outsider])).length).toBe(1);
  });

  it('never leaves a partner without an admin, even when two admins remove each other at once', async () => {
    const p = await createPartner(svc);
    const [a, b] = [await createUser(svc, p.id), await createUser(svc, p.id)];
    const ca = client();
    const cb = client();
    await ca.signIn(a, PASSWORD);
    await cb.signIn(b, PASSWORD);
    const [csrfA, csrfB] = [await ca.csrf('/portal/users'), await cb.csrf('/portal/users')];
    const [idA, idB] = [await userIdOf(a), await userIdOf(b)];
    const [ra, rb] = await Promise.all([ca.post(`/portal/users/${idB}/remove`, { _csrf: csrfA }), cb.post(`/portal/users/${idA}/remove`, { _csrf: csrfB })]);
    // One removal lands. The other finds its own user gone: under the users' lock (403, admins only) or, when
    // the first committed before its session was read, at the session check (sent to sign in). It removes nobody.
    const outcomes = [ra, rb].map((r) => (r.status === 303 ? r.location : r.status)).sort();
    expect([['/portal/users?done=user-removed', 403].sort(), ['/portal/login', '/portal/users?done=user-removed']]).toContainEqual(outcomes);
    expect(await sql(`SELECT role FROM portal_users WHERE partner_id = $1`, [p.id])).toEqual([{ role: 'admin' }]);
  });
});
