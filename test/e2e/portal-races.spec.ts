import { randomBytes } from 'node:crypto';
import { Client as Pg } from 'pg';
import { admin, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { PortalClient } from '../support/portal-client';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * A portal session's role and password are read when a request begins; what the request then changes is
 * decided again where it is made (a helper's hunt, 2026-11-27). Each test holds the row lock another change
 * would hold, so the calls queue in a known order: before the fixes, a demoted or removed admin's queued
 * change acted as admin, and a sign-in with the old password kept its session past the password change.
 */
let svc: TestService;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const uniqueEmail = () => `race-${randomBytes(4).toString('hex')}@example.com`;

async function createUser(partnerId: string, role: 'admin' | 'member' = 'admin'): Promise<{ email: string; id: string }> {
  const email = uniqueEmail();
  const r = await admin(svc, 'POST', `/partners/${partnerId}/users`, { email, password: PASSWORD, role });
  if (r.status !== 201) throw new Error(`user create failed: ${r.status} ${r.text}`);
  return { email, id: r.body.user_id };
}

async function signedIn(email: string): Promise<{ c: PortalClient; csrf: string }> {
  const c = new PortalClient(svc.publicUrl);
  if ((await c.signIn(email, PASSWORD)).status !== 303) throw new Error('sign-in failed');
  return { c, csrf: await c.csrf('/portal/account') };
}

const waitersOnLocks = async (n: number) => waitFor(async () => (await sql<{ n: number }>(
  `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n >= n, 10000, 20);

type Answer = Awaited<ReturnType<PortalClient['post']>>;

/**
 * Another transaction holds the rows `lockSql` locks; the calls start one after another, each once the one
 * before waits on them (so they queue in this order), then the rows are let go. Their answers, in order.
 */
async function queuedBehind(lockSql: string, params: unknown[], calls: Array<() => Promise<Answer>>): Promise<Answer[]> {
  const holder = new Pg({ connectionString: testEnv().databaseUrl });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(lockSql, params);
    const started: Array<Promise<Answer>> = [];
    for (const call of calls) {
      started.push(call());
      await waitersOnLocks(started.length);
    }
    await holder.query('ROLLBACK');
    return await Promise.all(started);
  } finally {
    await holder.end();
  }
}
const USERS_LOCK = `SELECT id FROM portal_users WHERE partner_id = $1 ORDER BY id FOR UPDATE`;

describe('an admin demoted or removed while their change waits', () => {
  it('a demoted admin\'s removal of another admin, queued behind the demotion: 403, the other admin stays', async () => {
    const p = await createPartner(svc);
    const [a, b, c] = [await createUser(p.id), await createUser(p.id), await createUser(p.id)];
    const [A, B] = [await signedIn(a.email), await signedIn(b.email)];
    const [demoted, removal] = await queuedBehind(USERS_LOCK, [p.id], [
      () => A.c.post(`/portal/users/${b.id}/role`, { _csrf: A.csrf, role: 'member' }),
      () => B.c.post(`/portal/users/${c.id}/remove`, { _csrf: B.csrf }),
    ]);
    expect(demoted.status).toBe(303);
    expect(removal.status).toBe(403);
    expect((await sql(`SELECT role FROM portal_users WHERE id = $1`, [b.id]))[0].role).toBe('member');
    expect(await sql(`SELECT id FROM portal_users WHERE id = $1`, [c.id])).toHaveLength(1);
  });

  it('a removed admin\'s promotion of a member, queued behind the removal: 403, the member stays a member', async () => {
    const p = await createPartner(svc);
    const [a, b, m] = [await createUser(p.id), await createUser(p.id), await createUser(p.id, 'member')];
    const [A, B] = [await signedIn(a.email), await signedIn(b.email)];
    const [removed, promotion] = await queuedBehind(USERS_LOCK, [p.id], [
      () => A.c.post(`/portal/users/${b.id}/remove`, { _csrf: A.csrf }),
      () => B.c.post(`/portal/users/${m.id}/role`, { _csrf: B.csrf, role: 'admin' }),
    ]);
    expect(removed.status).toBe(303);
    expect(promotion.status).toBe(403);
    expect((await sql(`SELECT role FROM portal_users WHERE id = $1`, [m.id]))[0].role).toBe('member');
  });

  it('a removed admin\'s invite, queued behind the removal: 403, nobody added', async () => {
    const p = await createPartner(svc);
    const [a, b] = [await createUser(p.id), await createUser(p.id)];
    const [A, B] = [await signedIn(a.email), await signedIn(b.email)];
    const accomplice = uniqueEmail();
    const [removed, invite] = await queuedBehind(USERS_LOCK, [p.id], [
      () => A.c.post(`/portal/users/${b.id}/remove`, { _csrf: A.csrf }),
      () => B.c.post('/portal/users', { _csrf: B.csrf, email: accomplice, password: PASSWORD, role: 'admin' }),
    ]);
    expect(removed.status).toBe(303);
    expect(invite.status).toBe(403);
    expect(await sql(`SELECT id FROM portal_users WHERE email = $1`, [accomplice])).toEqual([]);
  });
});

describe('a sign-in with the old password while the password changes', () => {
  it('keeps no session: the change and the sign-in queue on the user, and whichever goes second undoes the other\'s', async () => {
    const p = await createPartner(svc);
    const u = await createUser(p.id);
    const owner = await signedIn(u.email);
    const attacker = new PortalClient(svc.publicUrl);
    const loginCsrf = await attacker.csrf('/portal/login');
    const NEW = 'a completely different passphrase';
    const [changed, signIn] = await queuedBehind(`SELECT id FROM portal_users WHERE id = $1 FOR NO KEY UPDATE`, [u.id], [
      () => owner.c.post('/portal/account/password', { _csrf: owner.csrf, current_password: PASSWORD, new_password: NEW, new_password_repeat: NEW }),
      // It checks the old password before the change commits, then waits to store its session.
      () => attacker.post('/portal/login', { _csrf: loginCsrf, email: u.email, password: PASSWORD }),
    ]);
    expect(changed.location).toBe('/portal/account?done=password-changed');
    expect(signIn.status).toBeLessThan(500);
    const home = await attacker.get('/portal');
    expect(home.status).toBe(303);
    expect(home.location).toBe('/portal/login');
    // The owner's own session, which made the change, stays.
    expect((await owner.c.get('/portal')).status).toBe(200);
  });
});

/*
 * The removed user's row alone is held, so the removal (which locks the partner's users in id order) is the
 * first to wait on it and the change the second: the removal lands first, whatever the two ids' order.
 */
const USER_LOCK = `SELECT id FROM portal_users WHERE id = $1 FOR UPDATE`;

describe('a user removed while their change waits', () => {
  it('a key issued by a removed user, queued behind the removal: back to sign-in, no key, no trail row', async () => {
    const p = await createPartner(svc);
    const [a, b] = [await createUser(p.id), await createUser(p.id)];
    const [A, B] = [await signedIn(a.email), await signedIn(b.email)];
    const csrf = await B.c.csrf('/portal/keys');
    const label = `late-${randomBytes(3).toString('hex')}`;
    const [removed, issued] = await queuedBehind(USER_LOCK, [b.id], [
      () => A.c.post(`/portal/users/${b.id}/remove`, { _csrf: A.csrf }),
      () => B.c.post('/portal/keys', { _csrf: csrf, mode: 'live', scopes: ['requests:write'], label }),
    ]);
    expect(removed.status).toBe(303);
    expect([issued.status, issued.location]).toEqual([303, '/portal/login']);
    expect(issued.text).not.toMatch(/prs_(live|test)_/);
    expect(await sql(`SELECT id FROM api_keys WHERE partner_id = $1 AND label = $2`, [p.id, label])).toEqual([]);
    expect(await sql(`SELECT action FROM audit_events WHERE actor_id = $1 AND action = 'key.issued'`, [b.id])).toEqual([]);
  });

  it('a webhook secret rotated by a removed user, queued behind the removal: back to sign-in, the secret unchanged', async () => {
    const p = await createPartner(svc);
    const [a, b] = [await createUser(p.id), await createUser(p.id)];
    const [A, B] = [await signedIn(a.email), await signedIn(b.email)];
    const setup = await B.c.post('/portal/webhook', { _csrf: await B.c.csrf('/portal/webhook'), url: 'http://127.0.0.1:9/hook', enabled: 'on' });
    expect(setup.status).toBe(200); // the page that shows the new secret once
    const before = await sql(`SELECT secret, previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [p.id]);
    const csrf = await B.c.csrf('/portal/webhook');
    const [removed, rotated] = await queuedBehind(USER_LOCK, [b.id], [
      () => A.c.post(`/portal/users/${b.id}/remove`, { _csrf: A.csrf }),
      () => B.c.post('/portal/webhook/rotate', { _csrf: csrf }),
    ]);
    expect(removed.status).toBe(303);
    expect([rotated.status, rotated.location]).toEqual([303, '/portal/login']);
    expect(await sql(`SELECT secret, previous_secret FROM webhook_endpoints WHERE partner_id = $1`, [p.id])).toEqual(before);
  });
});
