import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AUDIT_ACTIONS } from '../../src/modules/audit/audit';
import { PortalSessionsService } from '../../src/modules/portal/portal-sessions.service';
import { recordProofEvent } from '../factories/events';
import { createShellMerchant, randomWallet, siweProof } from '../factories/merchants';
import { admin, createOnboardedMerchant, createPartner, tokenOf, uniqueSlug, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { PortalClient } from '../support/portal-client';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/**
 * The audit trail of operator and portal changes: one row per change, written in the change's transaction
 * (none for a refused change, and no change without its row), never holding a secret; listed by the admin
 * API with filters and, for its own partner only, on the portal's Audit log page.
 */
let svc: TestService;
const PASSWORD = 'correct horse battery staple';
/** Every secret a test saw: none may appear anywhere in the trail. */
const secrets: string[] = [];

beforeAll(async () => {
  // As behind a load balancer: the public listener believes X-Forwarded-For from loopback. The admin trail must not.
  svc = await startService({ env: { TRUST_PROXY: 'loopback' } });
});

afterAll(async () => {
  await svc?.close();
  await closeSql();
});

interface Row {
  id: string;
  actor_kind: string;
  actor_id: string | null;
  client_address: string | null;
  partner_id: string | null;
  action: string;
  target_id: string | null;
  details: Record<string, unknown>;
}

const trail = (partnerId: string): Promise<Row[]> =>
  sql(`SELECT id, actor_kind, actor_id, client_address, partner_id, action, target_id, details FROM audit_events WHERE partner_id = $1 ORDER BY at, id`, [partnerId]);

/** How the trail names a webhook URL's path: its SHA-256's first 12 hex digits. */
const pathDigest = (path: string) => createHash('sha256').update(path).digest('hex').slice(0, 12);

/** Runs the change and returns the one row it added to the partner's trail (failing on none or several). */
async function oneRow(partnerId: string, change: () => Promise<unknown>): Promise<Row> {
  const before = (await trail(partnerId)).length;
  await change();
  const after = await trail(partnerId);
  expect(after.length - before).toBe(1);
  return after[after.length - 1];
}

/** Runs a change that must be refused with `status`, and checks the partner's trail did not grow. */
async function noRow(partnerId: string, status: number, change: () => Promise<{ status: number }>): Promise<void> {
  const before = (await trail(partnerId)).length;
  expect((await change()).status).toBe(status);
  expect((await trail(partnerId)).length).toBe(before);
}

const ADMIN = { actor_kind: 'admin', actor_id: null, client_address: expect.stringMatching(/127\.0\.0\.1|::1/) };

async function portalUser(partnerId: string, role: 'admin' | 'member' = 'admin'): Promise<{ id: string; email: string; client: PortalClient }> {
  const email = `audit-${randomBytes(4).toString('hex')}@example.com`;
  const r = await admin(svc, 'POST', `/partners/${partnerId}/users`, { email, password: PASSWORD, role });
  if (r.status !== 201) throw new Error(`user create failed: ${r.status} ${r.text}`);
  const client = new PortalClient(svc.publicUrl);
  expect((await client.signIn(email, PASSWORD)).status).toBe(303);
  return { id: r.body.user_id, email, client };
}

describe('admin changes', () => {
  let p: TestPartner;

  it('records the partner and its first keys', async () => {
    p = await createPartner(svc);
    secrets.push(p.testKey, p.liveKey);
    const rows = await trail(p.id);
    expect(rows.map((r) => r.action)).toEqual(['partner.created', 'key.issued', 'key.issued']);
    expect(rows[0]).toMatchObject({ ...ADMIN, partner_id: p.id, target_id: p.id, details: { slug: p.slug, default_currency: 'usd' } });
    const keys = await sql(`SELECT id, display_prefix FROM api_keys WHERE partner_id = $1 ORDER BY created_at, id`, [p.id]);
    expect(rows.slice(1).map((r) => r.target_id).sort()).toEqual(keys.map((k: { id: string }) => k.id).sort());
    expect(rows[1]).toMatchObject({ ...ADMIN, details: { mode: expect.any(String), scopes: expect.any(Array), display_prefix: expect.any(String) } });
  });

  it('records a partner update with what changed', async () => {
    const row = await oneRow(p.id, () => admin(svc, 'PATCH', `/partners/${p.id}`, { name: 'Renamed Ltd', default_expiry_minutes: 30 }));
    expect(row).toMatchObject({
      ...ADMIN, action: 'partner.updated', target_id: p.id,
      details: { name: { from: `Partner ${p.slug}`, to: 'Renamed Ltd' }, default_expiry_minutes: { from: 60, to: 30 } },
    });
    expect(Object.keys(row.details).sort()).toEqual(['default_expiry_minutes', 'name']);
  });

  it('records nothing for a partner update that changes nothing', async () => {
    const count = async () => (await sql(`SELECT count(*)::int AS n FROM audit_events WHERE partner_id = $1`, [p.id]))[0].n;
    const settings = { name: 'Unchanged Ltd', default_expiry_minutes: 60 };
    expect((await admin(svc, 'PATCH', `/partners/${p.id}`, settings)).status).toBe(200);
    const before = await count();
    const updatedAt = async () => (await sql(`SELECT updated_at FROM partners WHERE id = $1`, [p.id]))[0].updated_at.getTime();
    const stamp = await updatedAt();
    const same = await admin(svc, 'PATCH', `/partners/${p.id}`, settings);
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ ok: true });
    expect(await count()).toBe(before);
    expect(await updatedAt()).toBe(stamp); // nothing written at all
  });

  it('records issuing and revoking a key, never the key', async () => {
    let issued: any;
    const row = await oneRow(p.id, async () => (issued = await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test', label: 'ci' })));
    secrets.push(issued.body.api_key);
    expect(row).toMatchObject({ ...ADMIN, action: 'key.issued', target_id: issued.body.key_id, details: { mode: 'test', label: 'ci', display_prefix: issued.body.display_prefix } });
    const revoked = await oneRow(p.id, () => admin(svc, 'DELETE', `/partners/${p.id}/keys/${issued.body.key_id}`));
    expect(revoked).toMatchObject({ ...ADMIN, action: 'key.revoked', target_id: issued.body.key_id, details: { already_revoked: false } });
    const again = await oneRow(p.id, () => admin(svc, 'DELETE', `/partners/${p.id}/keys/${issued.body.key_id}`));
    expect(again.details).toMatchObject({ already_revoked: true });
  });

  it('records disabling and enabling a merchant under its partner', async () => {
    const m = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey, body: { display_name: 'Audited Shop' } });
    expect(m.status).toBe(201);
    const id = m.body.merchant_id as string;
    const off = await oneRow(p.id, () => admin(svc, 'POST', `/merchants/${id}/disable`));
    expect(off).toMatchObject({ ...ADMIN, action: 'merchant.disabled', target_id: id, details: { test_mode: true, was_disabled: false } });
    const on = await oneRow(p.id, () => admin(svc, 'POST', `/merchants/${id}/enable`));
    expect(on).toMatchObject({ ...ADMIN, action: 'merchant.enabled', target_id: id, details: { was_disabled: true } });
  });

  it('two operators\' changes that race both stand, and each is credited with its own change only', async () => {
    const partner = await createPartner(svc, { name: 'Before both' });
    const patch = (body: unknown) => call(svc.adminUrl, 'PATCH', `/admin/api/partners/${partner.id}`, { key: ADMIN_TOKEN, body });
    // The partner's row held from elsewhere, so both updates are read before either writes.
    const holder = new Client({ connectionString: testEnv().databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM partners WHERE id = $1 FOR UPDATE', [partner.id]);
      const waiting = (n: number) => waitFor(async () => (await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> $1`,
        [(holder as unknown as { processID: number }).processID]))[0].n >= n, 10000, 20);
      const a = patch({ name: 'Renamed by A' });
      await waiting(1);
      const b = patch({ default_currency: 'eur' });
      await waiting(2);
      await holder.query('COMMIT');
      expect([(await a).status, (await b).status]).toEqual([200, 200]);
    } finally {
      await holder.end();
    }
    const now = (await admin(svc, 'GET', `/partners/${partner.id}`)).body;
    expect([now.name, now.default_currency]).toEqual(['Renamed by A', 'eur']);
    const trail = await sql<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_events WHERE partner_id = $1 AND action = 'partner.updated' ORDER BY at, id`, [partner.id]);
    expect(trail.map((t) => Object.keys(t.details).sort())).toEqual(expect.arrayContaining([['name'], ['default_currency']]));
    expect(trail).toHaveLength(2);
  });

  it("records an operator's TCP address, never an X-Forwarded-For sent to the admin port", async () => {
    const row = await oneRow(p.id, async () => {
      const r = await call(svc.adminUrl, 'PATCH', `/admin/api/partners/${p.id}`, {
        key: ADMIN_TOKEN,
        headers: { 'x-forwarded-for': '203.0.113.7' },
        body: { name: `Renamed ${Date.now()}` },
      });
      expect(r.status).toBe(200);
    });
    expect(row).toMatchObject({ ...ADMIN, action: 'partner.updated' });
    expect(row.client_address).not.toContain('203.0.113.7');
  });

  it('records where webhooks go (host, and the path only as a digest: no query, fragment or path token) and rotations, never a secret', async () => {
    const first = await oneRow(p.id, async () => {
      const r = await admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'http://127.0.0.1:9/hooks/T0/path-secret-9f8e?token=q-secret#frag', enabled: true });
      expect(r.status).toBe(200);
      secrets.push(r.body.secret, 'q-secret', 'path-secret-9f8e');
    });
    expect(first).toMatchObject({
      ...ADMIN, action: 'webhook.updated', target_id: p.id,
      details: { url: { from: null, to: `http://127.0.0.1:9/<sha256:${pathDigest('/hooks/T0/path-secret-9f8e')}>` }, url_changed: true, enabled: { from: false, to: true }, secret_generated: true },
    });
    const moved = await oneRow(p.id, () => admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'http://127.0.0.1:9/elsewhere', enabled: true }));
    expect(moved.details).toEqual({
      url: { from: `http://127.0.0.1:9/<sha256:${pathDigest('/hooks/T0/path-secret-9f8e')}>`, to: `http://127.0.0.1:9/<sha256:${pathDigest('/elsewhere')}>` }, url_changed: true, enabled: { from: true, to: true }, secret_generated: false,
    });
    const rotated = await oneRow(p.id, async () => {
      const r = await admin(svc, 'POST', `/partners/${p.id}/webhook/rotate`);
      expect(r.status).toBe(200);
      secrets.push(r.body.secret);
    });
    expect(rotated).toMatchObject({ ...ADMIN, action: 'webhook.secret_rotated', target_id: p.id, details: { replaced_pending_rotation: false } });
    const confirmed = await oneRow(p.id, () => admin(svc, 'POST', `/partners/${p.id}/webhook/confirm-rotation`));
    expect(confirmed).toMatchObject({ ...ADMIN, action: 'webhook.rotation_confirmed', details: { previous_secret_retired: true } });
    const [stored] = await sql(`SELECT secret FROM webhook_endpoints WHERE partner_id = $1`, [p.id]);
    secrets.push(stored.secret);
  });

  it('records a redelivery', async () => {
    const m = await createOnboardedMerchant(svc, p.testKey);
    const req = await mustCreateRequest(svc, p.testKey, { account_id: m.id, fiat_amount_int: 1234 });
    const ev = await recordProofEvent(svc, { partnerId: p.id, requestId: req.request_id, relay: false });
    await noRow(p.id, 409, () => admin(svc, 'POST', `/deliveries/${ev.id}/redeliver`)); // still pending
    await sql(`UPDATE webhook_events SET state = 'abandoned' WHERE id = $1`, [ev.id]);
    const row = await oneRow(p.id, () => admin(svc, 'POST', `/deliveries/${ev.id}/redeliver`));
    expect(row).toMatchObject({
      ...ADMIN, action: 'delivery.redelivered', target_id: ev.id,
      details: { event: 'payment.proof_attached', request_id: req.request_id, previous_state: 'abandoned' },
    });
  });

  it('records a manual rate refresh on the partner it was made for', async () => {
    const row = await oneRow(p.id, () => admin(svc, 'POST', `/partners/${p.id}/rates/refresh`));
    expect(row).toMatchObject({ ...ADMIN, action: 'rates.refreshed', target_id: null, details: { source: expect.any(String), rates: expect.objectContaining({ usd: '1' }) } });
    await noRow(p.id, 429, () => admin(svc, 'POST', `/partners/${p.id}/rates/refresh`));
  });

  it('records portal users added and removed by an operator, never the password', async () => {
    const email = `ops-${randomBytes(3).toString('hex')}@example.com`;
    let userId = '';
    const added = await oneRow(p.id, async () => {
      const r = await admin(svc, 'POST', `/partners/${p.id}/users`, { email, password: PASSWORD, role: 'member' });
      userId = r.body.user_id;
    });
    expect(added).toMatchObject({ ...ADMIN, action: 'portal_user.added', target_id: userId, details: { email, role: 'member' } });
    const [u] = await sql(`SELECT password_hash FROM portal_users WHERE id = $1`, [userId]);
    secrets.push(PASSWORD, u.password_hash);
    const removed = await oneRow(p.id, () => admin(svc, 'DELETE', `/partners/${p.id}/users/${userId}`));
    expect(removed).toMatchObject({ ...ADMIN, action: 'portal_user.removed', target_id: userId, details: { email, role: 'member' } });
  });
});

describe('refused changes leave no row', () => {
  it('writes nothing for a change that fails validation, a conflict or a missing target', async () => {
    const p = await createPartner(svc);
    const missing = '00000000-0000-4000-8000-000000000000';
    await noRow(p.id, 400, () => admin(svc, 'PATCH', `/partners/${p.id}`, { default_expiry_minutes: 7 }));
    await noRow(p.id, 400, () => admin(svc, 'PATCH', `/partners/${p.id}`, { default_currency: 'xyz' }));
    // Settings are changed, never cleared: null is a wrong type, not a field left out.
    for (const field of ['name', 'default_currency', 'allowed_expiry_minutes', 'default_expiry_minutes']) {
      await noRow(p.id, 400, () => admin(svc, 'PATCH', `/partners/${p.id}`, { [field]: null }));
    }
    await noRow(p.id, 400, () => admin(svc, 'PATCH', `/partners/${p.id}`, { name: '  ' }));
    await noRow(p.id, 400, () => admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'staging' }));
    await noRow(p.id, 404, () => admin(svc, 'DELETE', `/partners/${p.id}/keys/${missing}`));
    await noRow(p.id, 409, () => admin(svc, 'POST', `/partners/${p.id}/webhook/rotate`)); // no secret yet
    await noRow(p.id, 400, () => admin(svc, 'PUT', `/partners/${p.id}/webhook`, { url: 'ftp://127.0.0.1/x', enabled: true }));
    await noRow(p.id, 400, () => admin(svc, 'POST', `/partners/${p.id}/users`, { email: 'weak@example.com', password: 'short' }));
    const email = `dup-${randomBytes(3).toString('hex')}@example.com`;
    expect((await admin(svc, 'POST', `/partners/${p.id}/users`, { email, password: PASSWORD })).status).toBe(201);
    // The unique violation happens inside the transaction that would have held the row.
    await noRow(p.id, 409, () => admin(svc, 'POST', `/partners/${p.id}/users`, { email, password: PASSWORD }));
    const [only] = await sql(`SELECT id FROM portal_users WHERE email = $1`, [email]);
    await noRow(p.id, 409, () => admin(svc, 'DELETE', `/partners/${p.id}/users/${only.id}`)); // the last admin
    const before = (await sql(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'partner.created'`))[0].n;
    expect((await admin(svc, 'POST', '/partners', { slug: p.slug, name: 'Twin', default_currency: 'usd' })).status).toBe(409);
    expect((await admin(svc, 'POST', '/partners', { slug: uniqueSlug(), name: 'Bad', default_currency: 'usd', default_expiry_minutes: 7 })).status).toBe(400);
    const blank = await admin(svc, 'POST', '/partners', { slug: uniqueSlug(), name: '', default_currency: 'usd' });
    expect([blank.status, blank.body.error, blank.body.errors]).toEqual([400, 'invalid_request', [{ field: 'name', message: 'name must not be blank' }]]);
    expect((await sql(`SELECT count(*)::int AS n FROM audit_events WHERE action = 'partner.created'`))[0].n).toBe(before);
  });

  it('keeps the change out when its row cannot be written (one transaction)', async () => {
    const p = await createPartner(svc);
    // A constraint that refuses this partner's update rows only, so nothing else running is affected.
    const name = `audit_refuse_${randomBytes(4).toString('hex')}`;
    await sql(`ALTER TABLE audit_events ADD CONSTRAINT ${name} CHECK (partner_id <> '${p.id}' OR action <> 'partner.updated') NOT VALID`);
    try {
      expect((await admin(svc, 'PATCH', `/partners/${p.id}`, { name: 'Never stored' })).status).toBe(500);
    } finally {
      await sql(`ALTER TABLE audit_events DROP CONSTRAINT ${name}`);
    }
    expect((await sql(`SELECT name FROM partners WHERE id = $1`, [p.id]))[0].name).toBe(`Partner ${p.slug}`);
  });
});

describe('portal changes', () => {
  it('records every sign-in as the user’s, with its address; a failed one leaves no row', async () => {
    const p = await createPartner(svc);
    const email = `signin-${randomBytes(4).toString('hex')}@example.com`;
    const user = await admin(svc, 'POST', `/partners/${p.id}/users`, { email, password: PASSWORD, role: 'member' });
    expect(user.status).toBe(201);
    await noRow(p.id, 401, () => new PortalClient(svc.publicUrl).signIn(email, 'not the password'));
    const row = await oneRow(p.id, async () => expect((await new PortalClient(svc.publicUrl).signIn(email, PASSWORD)).status).toBe(303));
    expect(row).toMatchObject({
      actor_kind: 'portal_user', actor_id: user.body.user_id, partner_id: p.id, client_address: expect.stringMatching(/127\.0\.0\.1|::1/),
      action: 'portal_user.signed_in', target_id: user.body.user_id, details: { email },
    });
    const listed = await admin(svc, 'GET', `/audit?partner_id=${p.id}&action=portal_user.signed_in`);
    expect(listed.body.events.map((e: { event_id: string }) => e.event_id)).toEqual([row.id]);

    // Each sign-in's session is stored on its transaction's connection: twenty-five at once on the service's
    // pool of twenty complete (with a second connection each, they held all twenty and waited for ever).
    const sessions = svc.app.get(PortalSessionsService);
    await Promise.all(Array.from({ length: 25 }, () => svc.app.get(DataSource).transaction(async (em) => {
      await em.query('SELECT 1');
      await sessions.create(user.body.user_id, em);
    })));
  }, 30_000);

  it('records each change as the signed-in user’s, and lists only the partner’s own events to its admins', async () => {
    const p = await createPartner(svc);
    const other = await createPartner(svc);
    const me = await portalUser(p.id);
    const c = me.client;
    const PORTAL = { actor_kind: 'portal_user', actor_id: me.id, partner_id: p.id, client_address: expect.stringMatching(/127\.0\.0\.1|::1/) };
    let csrf = await c.csrf('/portal/keys');

    const issued = await oneRow(p.id, async () => {
      const r = await c.post('/portal/keys', { _csrf: csrf, mode: 'live', scopes: ['requests:read'], label: 'portal key' });
      expect(r.status).toBe(201);
      secrets.push(/prs_live_[A-Za-z0-9_-]{43}/.exec(r.text)![0]);
    });
    expect(issued).toMatchObject({ ...PORTAL, action: 'key.issued', details: { mode: 'live', scopes: ['requests:read'], label: 'portal key' } });
    const revoked = await oneRow(p.id, () => c.post(`/portal/keys/${issued.target_id}/revoke`, { _csrf: csrf }));
    expect(revoked).toMatchObject({ ...PORTAL, action: 'key.revoked', target_id: issued.target_id });

    const hook = await oneRow(p.id, async () => {
      const r = await c.post('/portal/webhook', { _csrf: csrf, url: 'http://127.0.0.1:9/portal-hook?sig=abc', enabled: 'on' });
      expect(r.status).toBe(200);
      secrets.push(/\b[0-9a-f]{64}\b/.exec(r.text)![0]);
    });
    expect(hook).toMatchObject({ ...PORTAL, action: 'webhook.updated', details: { url: { from: null, to: `http://127.0.0.1:9/<sha256:${pathDigest('/portal-hook')}>` }, secret_generated: true } });
    const rotated = await oneRow(p.id, async () => {
      const r = await c.post('/portal/webhook/rotate', { _csrf: csrf });
      expect(r.status).toBe(200);
      secrets.push(/\b[0-9a-f]{64}\b/.exec(r.text)![0]);
    });
    expect(rotated).toMatchObject({ ...PORTAL, action: 'webhook.secret_rotated' });
    expect(await oneRow(p.id, () => c.post('/portal/webhook/confirm-rotation', { _csrf: csrf }))).toMatchObject({ ...PORTAL, action: 'webhook.rotation_confirmed' });
    expect(await oneRow(p.id, () => c.post('/portal/rates/refresh', { _csrf: csrf }))).toMatchObject({ ...PORTAL, action: 'rates.refreshed' });

    csrf = await c.csrf('/portal/users');
    const inviteEmail = `invited-${randomBytes(3).toString('hex')}@example.com`;
    const invitePassword = `invite ${randomBytes(6).toString('hex')}`;
    secrets.push(invitePassword);
    const added = await oneRow(p.id, () => c.post('/portal/users', { _csrf: csrf, email: inviteEmail, password: invitePassword, role: 'member' }));
    expect(added).toMatchObject({ ...PORTAL, action: 'portal_user.added', details: { email: inviteEmail, role: 'member' } });
    const role = await oneRow(p.id, () => c.post(`/portal/users/${added.target_id}/role`, { _csrf: csrf, role: 'admin' }));
    expect(role).toMatchObject({ ...PORTAL, action: 'portal_user.role_changed', target_id: added.target_id, details: { role: { from: 'member', to: 'admin' } } });
    await noRow(p.id, 409, () => c.post(`/portal/users/${me.id}/remove`, { _csrf: csrf })); // nobody removes themself
    expect(await oneRow(p.id, () => c.post(`/portal/users/${added.target_id}/remove`, { _csrf: csrf }))).toMatchObject({ ...PORTAL, action: 'portal_user.removed' });

    csrf = await c.csrf('/portal/account');
    const newPassword = `new ${randomBytes(8).toString('hex')}`;
    secrets.push(newPassword);
    await noRow(p.id, 400, () => c.post('/portal/account/password', { _csrf: csrf, current_password: 'wrong password!', new_password: newPassword, new_password_repeat: newPassword }));
    const changed = await oneRow(p.id, () =>
      c.post('/portal/account/password', { _csrf: csrf, current_password: PASSWORD, new_password: newPassword, new_password_repeat: newPassword }),
    );
    expect(changed).toMatchObject({ ...PORTAL, action: 'portal_user.password_changed', target_id: me.id });

    // Another partner's events, made meanwhile, never show on this partner's page.
    await admin(svc, 'PATCH', `/partners/${other.id}`, { name: 'Other Partner Renamed' });
    const page = await c.get('/portal/audit');
    expect(page.status).toBe(200);
    const shown = [...page.text.matchAll(/data-event-id="([0-9a-f-]{36})"/g)].map((m) => m[1]);
    const own = (await trail(p.id)).map((r) => r.id);
    expect(shown.sort()).toEqual(own.sort());
    for (const r of await trail(other.id)) expect(page.text).not.toContain(r.id);
    expect(page.text).not.toContain('Other Partner Renamed');
    expect(page.text).toContain('data-action="portal_user.password_changed"');
    // The operators' addresses are the service's, not the partner's business: an admin row shows none.
    const adminRow = new RegExp(`<tr data-event-id="${(await trail(p.id)).find((r) => r.actor_kind === 'admin')!.id}"[\\s\\S]*?</tr>`).exec(page.text)![0];
    expect(adminRow).not.toMatch(/127\.0\.0\.1|::1/);

    const member = await portalUser(p.id, 'member');
    expect((await member.client.get('/portal/audit')).status).toBe(403);
  });
});

describe("the service's own changes", () => {
  it("a live wallet proof releasing a test merchant's named wallet: by `system`, in the losing partner's trail and portal page", async () => {
    const squatter = await createPartner(svc);
    const owner = randomWallet();
    const claim = await createShellMerchant(svc, squatter.testKey, { wallet_address: owner.address });
    const owners = await createPartner(svc);
    const live = await createShellMerchant(svc, owners.liveKey, {});
    const token = tokenOf(live.onboarding_url);
    const row = await oneRow(squatter.id, async () => {
      const r = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, owner) });
      expect(r.status).toBe(200);
    });
    expect(row).toMatchObject({ actor_kind: 'system', actor_id: null, client_address: null, action: 'merchant.wallet_released', target_id: claim.merchant_id });
    // Nothing in it names the other partner or its merchant.
    expect(JSON.stringify(row)).not.toContain(owners.id);
    expect(JSON.stringify(row)).not.toContain(live.merchant_id);

    const listed = await admin(svc, 'GET', `/audit?partner_id=${squatter.id}&action=merchant.wallet_released`);
    expect(listed.body.events).toEqual([expect.objectContaining({ actor: { kind: 'system', id: null, address: null }, target_id: claim.merchant_id })]);
    const { client } = await portalUser(squatter.id);
    const page = await client.get('/portal/audit');
    const shown = new RegExp(`<tr data-event-id="${row.id}"[\\s\\S]*?</tr>`).exec(page.text)![0];
    expect(shown).toContain('>service<');
    expect(shown).not.toContain('removed user');
  });
});

describe('GET /admin/api/audit', () => {
  it('lists newest first, filters by partner, action and since, pages with limit and offset', async () => {
    const p = await createPartner(svc);
    await admin(svc, 'PATCH', `/partners/${p.id}`, { name: 'First' });
    const [{ at }] = await sql(`SELECT max(at) AS at FROM audit_events WHERE partner_id = $1`, [p.id]);
    // `at` is rounded to the millisecond: the next change must start past that, so `since` tells the two apart.
    const since = new Date(new Date(at).getTime() + 1).toISOString();
    await waitFor(async () => (await sql(`SELECT clock_timestamp() > $1::timestamptz + interval '1 ms' AS past`, [since]))[0].past);
    await admin(svc, 'PATCH', `/partners/${p.id}`, { name: 'Second' });

    const all = await admin(svc, 'GET', `/audit?partner_id=${p.id}`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    expect(all.body.events.map((e: any) => e.action)).toEqual(['partner.updated', 'partner.updated', 'key.issued', 'key.issued', 'partner.created']);
    expect(all.body.events[0]).toEqual({
      event_id: expect.any(String), at: expect.any(String), actor: { kind: 'admin', id: null, address: expect.any(String) },
      partner_id: p.id, action: 'partner.updated', target_id: p.id, details: { name: { from: 'First', to: 'Second' } },
    });

    const updates = await admin(svc, 'GET', `/audit?partner_id=${p.id}&action=partner.updated&limit=1`);
    expect(updates.body).toMatchObject({ has_more: true, limit: 1, offset: 0 });
    expect(updates.body.events.map((e: any) => e.details.name.to)).toEqual(['Second']);
    const next = await admin(svc, 'GET', `/audit?partner_id=${p.id}&action=partner.updated&limit=1&offset=1`);
    expect(next.body).toMatchObject({ has_more: false, offset: 1 });
    expect(next.body.events.map((e: any) => e.details.name.to)).toEqual(['First']);

    const recent = await admin(svc, 'GET', `/audit?partner_id=${p.id}&since=${encodeURIComponent(since)}`);
    expect(recent.body.events.map((e: any) => e.details.name?.to)).toEqual(['Second']);

    const anyPartner = await admin(svc, 'GET', '/audit?action=partner.created&limit=100');
    expect(anyPartner.body.events.every((e: any) => e.action === 'partner.created')).toBe(true);
    expect(anyPartner.body.events.some((e: any) => e.partner_id === p.id)).toBe(true);
  });

  it.each([
    ['partner_id=not-a-uuid'],
    ['action=partner.deleted'],
    ['since=yesterday'],
    ['since=2026-W48'],
    ['since=2026-330'],
    ['limit=0'],
    ['limit=101'],
    ['limit=1e1'],
    ['offset=-1'],
    ['actor=admin'],
  ])('refuses %s with 400 invalid_request', async (q) => {
    const r = await admin(svc, 'GET', `/audit?${q}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_request' });
  });

  it('is the admin listener’s, behind the admin token', async () => {
    expect((await call(svc.publicUrl, 'GET', '/admin/api/audit', { key: 'test-admin-token-0123456789' })).status).toBe(404);
    expect((await call(svc.adminUrl, 'GET', '/admin/api/audit')).status).toBe(401);
  });
});

describe('the table', () => {
  it('is append-only and speaks the vocabulary the code does', async () => {
    const [row] = await sql(`SELECT id FROM audit_events LIMIT 1`);
    await expect(sql(`UPDATE audit_events SET details = '{}' WHERE id = $1`, [row.id])).rejects.toThrow(/append-only/);
    await expect(sql(`DELETE FROM audit_events WHERE id = $1`, [row.id])).rejects.toThrow(/append-only/);
    await expect(sql(`TRUNCATE audit_events`)).rejects.toThrow(/append-only/);
    const [{ def }] = await sql(`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'audit_events_action_check'`);
    expect([...(def as string).matchAll(/'([a-z_.]+)'::text/g)].map((m) => m[1]).sort()).toEqual([...AUDIT_ACTIONS].sort());
  });

  it('holds none of the secrets the tests saw', async () => {
    const rows = await sql(`SELECT details::text AS d, coalesce(client_address, '') AS a FROM audit_events`);
    const text = rows.map((r: { d: string; a: string }) => `${r.d} ${r.a}`).join('\n');
    expect(secrets.length).toBeGreaterThan(10);
    for (const s of secrets) {
      expect(typeof s).toBe('string');
      expect(text).not.toContain(s);
    }
  });
});
