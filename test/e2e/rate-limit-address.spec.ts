import { randomBytes, randomUUID } from 'node:crypto';
import { ChangeFeed } from '../../src/database/change-feed';
import { ApiKeyService } from '../../src/modules/auth/api-key.service';
import { admin, createKey, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { freshMinute } from '../support/clock';
import { closeSql, sql } from '../support/db';
import { call, type Reply } from '../support/http';

/*
 * Issue 10 point 9 (a)–(c): calls without a valid key are limited per client address before any key lookup;
 * bad keys never push valid ones out of the key cache; per-address limits count IPv6 by /64 and IPv4-mapped
 * IPv6 as IPv4. TRUST_PROXY=loopback lets the test speak for any client address through X-Forwarded-For.
 */
const AUTH_FAILURES = 5;
const PUBLIC_LIMIT = 3;
const KEY_CACHE_MS = 600_000;
// The key cache holds this many keys (production: 10,000); the eviction test sends as many bad keys.
const KEY_CACHE_MAX_ENTRIES = 1000;
let svc: TestService;
let p: TestPartner;

beforeAll(async () => {
  svc = await startService({
    env: {
      TRUST_PROXY: 'loopback',
      AUTH_FAILURE_RATE_LIMIT: String(AUTH_FAILURES),
      PUBLIC_RATE_LIMIT: String(PUBLIC_LIMIT),
      // The key cache test looks up as many keys as the cache holds within one TTL: 25 to 32 s were seen for
      // 10,000 on a loaded machine, against the default 30 s. Ten minutes keeps that test about eviction, not
      // about the machine's speed.
      API_KEY_CACHE_MS: String(KEY_CACHE_MS),
      API_KEY_CACHE_MAX_ENTRIES: String(KEY_CACHE_MAX_ENTRIES),
    },
  });
  p = await createPartner(svc);
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

const from = (address: string, key?: string): Promise<Reply> =>
  call(svc.publicUrl, 'GET', '/api/v1/requests', { key, headers: { 'x-forwarded-for': address } });
const badKey = () => `prs_test_${randomBytes(32).toString('base64url')}`;
function expectLimited(r: Reply) {
  expect({ status: r.status, text: r.text }).toEqual({ status: 429, text: '{"ok":false,"error":"rate_limited"}' });
}

describe('calls without a valid key, per client address (a)', () => {
  it('after AUTH_FAILURE_RATE_LIMIT bad or missing keys an address gets 429, and its keys are not looked up', async () => {
    const keys = svc.app.get(ApiKeyService);
    const lookups = jest.spyOn(keys as unknown as { load: () => Promise<unknown> }, 'load');
    const valid = await createKey(svc, p.id, { mode: 'test' });
    freshMinute();
    const attacker = '198.51.100.10';
    for (let i = 0; i < AUTH_FAILURES; i++) {
      const r = await from(attacker, i === 0 ? undefined : badKey());
      expect({ call: i + 1, status: r.status, error: r.body?.error }).toEqual({ call: i + 1, status: 401, error: 'unauthorized' });
    }
    lookups.mockClear();
    for (let i = 0; i < 20; i++) expectLimited(await from(attacker, badKey()));
    expectLimited(await from(attacker));
    // Refused before the database is asked.
    expect(lookups).not.toHaveBeenCalled();
    // A key never seen in use is refused too (a guess looks the same); other addresses are unaffected.
    expectLimited(await from(attacker, valid));
    expect(lookups).not.toHaveBeenCalled();
    expect((await from('198.51.100.11', valid)).status).toBe(200);
    expect((await from('198.51.100.11', badKey())).status).toBe(401);
    lookups.mockRestore();
  });

  it('a revoked key spends no budget of its address: a stale key in one job locks none of the partner\'s keys out (spec §8 counts per key)', async () => {
    // A partner's job still holding a revoked key, behind the NAT its other jobs share (a partner-docs hunt):
    // its 401s used to answer the partner's valid keys 429 for the rest of every minute.
    const issue = async () => (await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' })).body as { api_key: string; key_id: string };
    const staleKey = await issue();
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${staleKey.key_id}`)).status).toBe(200);
    const nat = '198.51.100.30';
    freshMinute();
    for (let i = 0; i < 3 * AUTH_FAILURES; i++) expect((await from(nat, staleKey.api_key)).status).toBe(401);
    // A key this instance has never seen in use is let in too: nothing was counted.
    expect((await from(nat, (await issue()).api_key)).status).toBe(200);
  });

  it('a key in use is let in from an address over its budget; revoked, it is refused before any lookup like a guess', async () => {
    const keys = svc.app.get(ApiKeyService);
    const validKey = (await admin(svc, 'POST', `/partners/${p.id}/keys`, { mode: 'test' })).body as { api_key: string; key_id: string };
    const valid = validKey.api_key;
    const nat = '198.51.100.31';
    freshMinute();
    expect((await from(nat, valid)).status).toBe(200);
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await from(nat, badKey())).status).toBe(401);
    expectLimited(await from(nat, badKey()));
    // Looked up as usual (not answered from a cache that outlived its TTL), and let in.
    const cached = jest.spyOn((keys as unknown as { cache: { get: () => undefined } }).cache, 'get').mockReturnValue(undefined);
    const lookups = jest.spyOn(keys as unknown as { load: () => Promise<unknown> }, 'load');
    try {
      expect((await from(nat, valid)).status).toBe(200);
      expect(lookups).toHaveBeenCalledTimes(1);
    } finally {
      cached.mockRestore();
      lookups.mockRestore();
    }
    expect((await admin(svc, 'DELETE', `/partners/${p.id}/keys/${validKey.key_id}`)).status).toBe(200);
    const after = jest.spyOn(keys as unknown as { load: () => Promise<unknown> }, 'load');
    try {
      expectLimited(await from(nat, valid));
      expect(after).not.toHaveBeenCalled();
    } finally {
      after.mockRestore();
    }
  });

  it('another instance sharing Redis refuses the address too, before its database lookup', async () => {
    const other = await startService({ env: { TRUST_PROXY: 'loopback', AUTH_FAILURE_RATE_LIMIT: String(AUTH_FAILURES), REDIS_PREFIX: svc.config.redisPrefix } });
    try {
      freshMinute();
      const attacker = '198.51.100.20';
      for (let i = 0; i < AUTH_FAILURES; i++) expect((await from(attacker, badKey())).status).toBe(401);
      const db = jest.spyOn(other.app.get(ApiKeyService) as unknown as { load: () => Promise<unknown> }, 'load');
      const r = await call(other.publicUrl, 'GET', '/api/v1/requests', { key: badKey(), headers: { 'x-forwarded-for': attacker } });
      expectLimited(r);
      expect(db).not.toHaveBeenCalled();
    } finally {
      await other.close();
    }
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped client as its IPv4 address (c)', async () => {
    freshMinute();
    for (let i = 1; i <= AUTH_FAILURES; i++) expect((await from(`2001:db8:77:1::${i.toString(16)}`, badKey())).status).toBe(401);
    expectLimited(await from('2001:db8:77:1:ffff:1234:5678:9abc', badKey()));
    expect((await from('2001:db8:77:2::1', badKey())).status).toBe(401);

    for (let i = 0; i < AUTH_FAILURES; i++) expect((await from(i % 2 ? '203.0.113.40' : '::ffff:203.0.113.40', badKey())).status).toBe(401);
    expectLimited(await from('203.0.113.40', badKey()));
    expectLimited(await from('::ffff:203.0.113.40', badKey()));
    expect((await from('203.0.113.41', badKey())).status).toBe(401);
  });
});

describe('public page limits bucket IPv6 by /64 (c)', () => {
  it('addresses of one /64 share the pay API budget; the next /64 has its own', async () => {
    freshMinute();
    const path = `/pay/api/${randomUUID()}`;
    const get = (address: string) => call(svc.publicUrl, 'GET', path, { headers: { 'x-forwarded-for': address } });
    for (let i = 1; i <= PUBLIC_LIMIT; i++) expect((await get(`2001:db8:88:5::${i}`)).status).toBe(404);
    expectLimited(await get('2001:db8:88:5:abcd::1'));
    expect((await get('2001:db8:88:6::1')).status).toBe(404);
  });
});

describe('the key cache (b)', () => {
  it('as many distinct bad keys as the cache holds (API_KEY_CACHE_MAX_ENTRIES) do not evict a cached valid key', async () => {
    const keys = svc.app.get(ApiKeyService);
    const feed = svc.app.get(ChangeFeed);
    // A cache answers from memory only while the change feed is live, and is emptied when it listens again:
    // on a loaded machine the feed can miss its heartbeat (a CI run saw it), and the valid entry then goes,
    // rightly. Such a round says nothing about eviction by bad keys, and is run again.
    for (let round = 1; ; round++) {
      const valid = await createKey(svc, p.id, { mode: 'test' });
      expect(await keys.authenticate(valid)).not.toBeNull();
      // Revoked behind the service's back (no invalidation): only a cached entry can still answer for it.
      await sql(`UPDATE api_keys SET revoked_at = now() WHERE partner_id = $1`, [p.id]);
      const started = Date.now();
      let live = feed.live;
      // Were bad keys cached with valid ones, the oldest entry (the valid key) would be pushed out by these.
      expect(svc.config.apiKeyCacheMaxEntries).toBe(KEY_CACHE_MAX_ENTRIES);
      for (let i = 0; i < KEY_CACHE_MAX_ENTRIES; i += 100) {
        const answers = await Promise.all(Array.from({ length: 100 }, () => keys.authenticate(badKey())));
        expect(answers.every((a) => a === null)).toBe(true);
        live &&= feed.live;
      }
      // Within the cache TTL (API_KEY_CACHE_MS, KEY_CACHE_MS here), the valid entry must still be there.
      expect(Date.now() - started).toBeLessThan(svc.config.apiKeyCacheMs);
      const answer = await keys.authenticate(valid);
      if (!(live && feed.live) && round < 3) continue;
      expect(answer).toMatchObject({ partnerId: p.id });
      break;
    }
  }, 180_000);
});
