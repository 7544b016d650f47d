import { randomWallet, siweProof, createShellMerchant } from '../factories/merchants';
import { createOnboardedMerchant, createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { createRequest } from '../factories/requests';
import { ADMIN_TOKEN, startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { UUID_RE } from '../support/shapes';

/*
 * DESIGN §4 onboarding: the merchant proves its wallet with a Sign-In with Ethereum message (domain = host of
 * PUBLIC_URL, uri = the onboarding URL, nonce = the one handed out), accepts the terms, and is complete.
 */
let svc: TestService;
let p: TestPartner;
beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
});
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

/** A syntactically fine proof body for a dead token (the token is checked first). */
const DEAD_TOKEN_PROOF = { message: 'x', signature: `0x${'ab'.repeat(65)}` };
const state = (token: string) => call(svc.publicUrl, 'GET', `/onboarding/api/${token}`);
const proveWallet = (token: string, body: unknown) => call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body });
const complete = (token: string, body: unknown) => call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body });
const merchantGet = (id: string) => call(svc.publicUrl, 'GET', `/api/v1/merchants/${id}`, { key: p.testKey });

describe('GET /onboarding/api/<token>', () => {
  it('answers with the merchant id, status, wallet, a nonce and the terms version', async () => {
    const wallet = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: wallet.address });
    const token = tokenOf(m.onboarding_url);
    const r = await state(token);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      ok: true,
      merchant_id: m.merchant_id,
      onboarding_status: 'incomplete',
      wallet_address: wallet.address.toLowerCase(),
      nonce: expect.stringMatching(/^[A-Za-z0-9]{8,}$/),
      terms_version: expect.any(String),
    });
    expect(r.body.terms_version.length).toBeGreaterThan(0);
    // The nonce stays the same until it is used, so a page reload does not invalidate an open signature prompt.
    expect((await state(token)).body.nonce).toBe(r.body.nonce);
  });

  it('a shell merchant without a wallet shows wallet_address null', async () => {
    const m = await createShellMerchant(svc, p.testKey, {});
    const r = await state(tokenOf(m.onboarding_url));
    expect(r.body).toMatchObject({ ok: true, merchant_id: m.merchant_id, wallet_address: null, onboarding_status: 'incomplete' });
  });

  it.each([
    ['unknown token of the right form', 'A'.repeat(43)],
    ['short token', 'abc'],
    ['token with bad characters', `${'A'.repeat(42)}!`],
  ])('%s → 404 not_found', async (_label, token) => {
    for (const r of [await state(token), await proveWallet(token, { message: 'x', signature: `0x${'1'.repeat(130)}` }), await complete(token, { accept_terms: true })]) {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }
  });

  it('the onboarding API needs no API key and is not on the admin listener', async () => {
    const m = await createShellMerchant(svc, p.testKey, {});
    const token = tokenOf(m.onboarding_url);
    expect((await call(svc.adminUrl, 'GET', `/onboarding/api/${token}`)).status).toBe(404);
  });
});

describe('POST /onboarding/api/<token>/wallet: bad proofs change nothing', () => {
  let m: any;
  let token: string;
  const signer = randomWallet();
  beforeAll(async () => {
    m = await createShellMerchant(svc, p.testKey, { display_name: 'No wallet yet' });
    token = tokenOf(m.onboarding_url);
  });

  async function expectUnchanged() {
    const got = await merchantGet(m.merchant_id);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(m);
    expect((await state(token)).body.wallet_address).toBeNull();
    // Completing still needs a proven wallet.
    expect((await complete(token, { accept_terms: true })).body.error).toBe('wallet_required');
  }

  it.each([
    ['a wrong nonce', { nonce: 'abcdef0123456789' }],
    ['a wrong domain', { domain: 'evil.example.com' }],
    ['the right host on another port', { domain: 'localhost:4000' }],
    ['a wrong uri', { uri: 'http://localhost:3999/onboarding/someone-else' }],
    ['a uri on another host', { uri: 'https://evil.example.com/onboarding/x' }],
  ])('%s → 400 invalid_signature', async (_label, parts) => {
    const proof = await siweProof(svc, token, signer, parts);
    const r = await proveWallet(token, proof);
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('invalid_signature');
    await expectUnchanged();
  });

  it('a message naming one wallet but signed by another → 400 invalid_signature', async () => {
    const claimed = randomWallet();
    const proof = await siweProof(svc, token, signer, { address: claimed.address });
    const r = await proveWallet(token, proof);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_signature');
    await expectUnchanged();
  });

  it('a signature over another message → 400 invalid_signature', async () => {
    const proof = await siweProof(svc, token, signer);
    const other = await siweProof(svc, token, signer, { chainId: 1 });
    const r = await proveWallet(token, { message: proof.message, signature: other.signature });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_signature');
    await expectUnchanged();
  });

  it.each([
    ['garbage text', { message: 'hello, please let me in', signature: `0x${'ab'.repeat(65)}` }],
    ['an empty message', { message: '', signature: `0x${'ab'.repeat(65)}` }],
  ])('%s → 400 with a clear error', async (_label, body) => {
    const r = await proveWallet(token, body);
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('invalid_signature');
    expect(r.body.errors?.[0]).toEqual({ field: 'message', message: expect.any(String) });
    await expectUnchanged();
  });

  it.each([
    ['a malformed signature', { message: 'x', signature: '0x1234' }],
    ['no signature', { message: 'x' }],
    ['a number as message', { message: 5, signature: `0x${'ab'.repeat(65)}` }],
    ['an unknown field', { message: 'x', signature: `0x${'ab'.repeat(65)}`, wallet: 'x' }],
  ])('%s → 400 invalid_request', async (_label, body) => {
    const r = await proveWallet(token, body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    await expectUnchanged();
  });

  it('a correct proof after all that still works', async () => {
    const proof = await siweProof(svc, token, signer);
    const r = await proveWallet(token, proof);
    expect(r.status).toBe(200);
    expect(r.body.wallet_address).toBe(signer.address.toLowerCase());
    const got = await merchantGet(m.merchant_id);
    expect(got.body).toEqual({ ...m, wallet_address: signer.address.toLowerCase() });
  });
});

describe('wallet rules', () => {
  it('a wallet other than the one given at create → 400 wallet_mismatch, nothing changes', async () => {
    const given = randomWallet();
    const other = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: given.address });
    const token = tokenOf(m.onboarding_url);
    const r = await proveWallet(token, await siweProof(svc, token, other));
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe('wallet_mismatch');
    expect((await merchantGet(m.merchant_id)).body).toEqual(m);
    expect((await complete(token, { accept_terms: true })).body.error).toBe('wallet_required');
    // The right wallet still works.
    expect((await proveWallet(token, await siweProof(svc, token, given))).status).toBe(200);
  });

  it('a wallet another merchant named → 409 wallet_address_conflict for a test merchant', async () => {
    const owned = randomWallet();
    const otherPartner = await createPartner(svc);
    const holder = await createShellMerchant(svc, otherPartner.testKey, { wallet_address: owned.address });
    const m = await createShellMerchant(svc, p.testKey, {});
    const token = tokenOf(m.onboarding_url);
    const r = await proveWallet(token, await siweProof(svc, token, owned));
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ ok: false, error: 'wallet_address_conflict' });
    expect((await merchantGet(m.merchant_id)).body.wallet_address).toBeNull();
    expect((await call(svc.publicUrl, 'GET', `/api/v1/merchants/${holder.merchant_id}`, { key: otherPartner.testKey })).body.wallet_address).toBe(owned.address.toLowerCase());
  });

  it("a live merchant's proof takes the wallet off a test merchant that only named it: a free test key cannot keep a wallet from its owner", async () => {
    const owner = randomWallet();
    const squatter = await createPartner(svc);
    const claim = await createShellMerchant(svc, squatter.testKey, { wallet_address: owner.address });
    // Spec §4.5 rule 2: while the test merchant names it, a create naming it elsewhere is a conflict.
    const named = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.liveKey, body: { wallet_address: owner.address } });
    expect(named.status).toBe(409);
    expect(named.body).toEqual({ ok: false, error: 'wallet_address_conflict' });

    // The owner onboards a live merchant created without a wallet, and proves it.
    const live = await createShellMerchant(svc, p.liveKey, {});
    const token = tokenOf(live.onboarding_url);
    const proved = await proveWallet(token, await siweProof(svc, token, owner));
    expect(proved.status).toBe(200);
    expect(proved.body.wallet_address).toBe(owner.address.toLowerCase());
    expect((await complete(token, { accept_terms: true })).status).toBe(200);
    const liveNow = await call(svc.publicUrl, 'GET', `/api/v1/merchants/${live.merchant_id}`, { key: p.liveKey });
    expect(liveNow.body).toMatchObject({ wallet_address: owner.address.toLowerCase(), onboarding_status: 'complete' });

    // The test merchant lost the claim, in its partner's audit trail by the service; naming the wallet again
    // is now a conflict with the live owner, and so is proving it.
    const claimNow = await call(svc.publicUrl, 'GET', `/api/v1/merchants/${claim.merchant_id}`, { key: squatter.testKey });
    expect(claimNow.body).toMatchObject({ wallet_address: null, onboarding_status: 'incomplete' });
    expect(await sql(`SELECT actor_kind, actor_id, client_address, partner_id, details FROM audit_events WHERE action = 'merchant.wallet_released' AND target_id = $1`, [claim.merchant_id])).toEqual([
      { actor_kind: 'system', actor_id: null, client_address: null, partner_id: squatter.id,
        details: { test_mode: true, wallet_address: owner.address.toLowerCase(), reason: 'proven by a live merchant' } },
    ]);
    const again = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: squatter.testKey, body: { wallet_address: owner.address } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ ok: false, error: 'wallet_address_conflict' });
    const claimToken = tokenOf(claimNow.body.onboarding_url);
    expect((await proveWallet(claimToken, await siweProof(svc, claimToken, owner))).body).toEqual({ ok: false, error: 'wallet_address_conflict' });
    // It can still onboard with a wallet of its own.
    expect((await proveWallet(claimToken, await siweProof(svc, claimToken, randomWallet()))).status).toBe(200);
  });

  it('a test merchant that proved the wallet keeps it though its onboarding is not complete: a live proof elsewhere → 409', async () => {
    const other = await createPartner(svc);
    const w = randomWallet();
    const half = await createShellMerchant(svc, other.testKey, { wallet_address: w.address });
    const halfToken = tokenOf(half.onboarding_url);
    expect((await proveWallet(halfToken, await siweProof(svc, halfToken, w))).status).toBe(200);
    const live = await createShellMerchant(svc, p.liveKey, {});
    const token = tokenOf(live.onboarding_url);
    expect((await proveWallet(token, await siweProof(svc, token, w))).body).toEqual({ ok: false, error: 'wallet_address_conflict' });
    expect((await call(svc.publicUrl, 'GET', `/api/v1/merchants/${half.merchant_id}`, { key: other.testKey })).body.wallet_address).toBe(w.address.toLowerCase());
    expect(await sql(`SELECT 1 FROM audit_events WHERE action = 'merchant.wallet_released' AND target_id = $1`, [half.merchant_id])).toEqual([]);
  });

  it('a wallet a test merchant proved, or a live merchant named, stays theirs: a live proof elsewhere → 409, nothing changes', async () => {
    const other = await createPartner(svc);
    const proven = await createOnboardedMerchant(svc, other.testKey);
    const namedLive = randomWallet();
    const liveClaim = await createShellMerchant(svc, other.liveKey, { wallet_address: namedLive.address });
    for (const [w, holder, key] of [[proven.wallet, proven.id, other.testKey], [namedLive, liveClaim.merchant_id, other.liveKey]] as const) {
      const live = await createShellMerchant(svc, p.liveKey, {});
      const token = tokenOf(live.onboarding_url);
      const r = await proveWallet(token, await siweProof(svc, token, w as ReturnType<typeof randomWallet>));
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ ok: false, error: 'wallet_address_conflict' });
      expect((await call(svc.publicUrl, 'GET', `/api/v1/merchants/${live.merchant_id}`, { key: p.liveKey })).body.wallet_address).toBeNull();
      expect((await call(svc.publicUrl, 'GET', `/api/v1/merchants/${holder}`, { key })).body.wallet_address).toBe(w.address.toLowerCase());
    }
  });

  it('a signed proof is single use: replaying it fails once it has been used', async () => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address });
    const token = tokenOf(m.onboarding_url);
    const proof = await siweProof(svc, token, w);
    expect((await proveWallet(token, proof)).status).toBe(200);
    const again = await proveWallet(token, proof);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_signature');
  });
});

describe('POST /onboarding/api/<token>/complete', () => {
  it('without a proven wallet → 400 wallet_required', async () => {
    const m = await createShellMerchant(svc, p.testKey, {});
    const r = await complete(tokenOf(m.onboarding_url), { accept_terms: true });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ ok: false, error: 'wallet_required' });
  });

  it('a wallet given at create but not proven is not enough', async () => {
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: randomWallet().address });
    const r = await complete(tokenOf(m.onboarding_url), { accept_terms: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('wallet_required');
  });

  it.each([
    ['accept_terms false', { accept_terms: false }, 'terms_not_accepted'],
    ['accept_terms missing', {}, 'invalid_request'],
    ['accept_terms "true" as a string', { accept_terms: 'true' }, 'invalid_request'],
  ])('%s → 400 %s', async (_label, body, code) => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address });
    const token = tokenOf(m.onboarding_url);
    expect((await proveWallet(token, await siweProof(svc, token, w))).status).toBe(200);
    const r = await complete(token, body);
    expect(r.status).toBe(400);
    expect(r.body.ok).toBe(false);
    expect(r.body.error).toBe(code);
    expect((await merchantGet(m.merchant_id)).body.onboarding_status).toBe('incomplete');
  });

  it('completes: merchant complete, onboarding_url null, token dead, requests now possible', async () => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address, display_name: 'Before' });
    const token = tokenOf(m.onboarding_url);

    const before = await createRequest(svc, p.testKey, { account_id: m.merchant_id, fiat_amount_int: 100 });
    expect(before.status).toBe(400);
    expect(before.body).toEqual({ ok: false, error: 'merchant_onboarding_incomplete' });

    expect((await proveWallet(token, await siweProof(svc, token, w))).status).toBe(200);
    const done = await complete(token, { accept_terms: true, display_name: 'After', country: 'NL', display_currency: 'EUR' });
    expect(done.status).toBe(200);
    expect(done.body.ok).toBe(true);
    expect(done.body.onboarding_status).toBe('complete');

    const got = await merchantGet(m.merchant_id);
    expect(got.body).toEqual({
      ...m,
      onboarding_status: 'complete',
      onboarding_url: null,
      wallet_address: w.address.toLowerCase(),
      display_name: 'After',
      country: 'NL',
      display_currency: 'eur',
    });

    for (const r of [await state(token), await proveWallet(token, DEAD_TOKEN_PROOF), await complete(token, { accept_terms: true })]) {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ ok: false, error: 'not_found' });
    }

    const req = await createRequest(svc, p.testKey, { account_id: m.merchant_id, fiat_amount_int: 100 });
    expect(req.status).toBe(201);
    expect(req.body.fiat_currency).toBe('eur');
    expect(req.body.account_id).toBe(m.merchant_id);
  });

  it('a complete with an unsupported display_currency → 400 and onboarding stays incomplete', async () => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address });
    const token = tokenOf(m.onboarding_url);
    expect((await proveWallet(token, await siweProof(svc, token, w))).status).toBe(200);
    const r = await complete(token, { accept_terms: true, display_currency: 'xyz' });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect((await merchantGet(m.merchant_id)).body.onboarding_status).toBe('incomplete');
  });

  it('the factory flow gives a complete merchant with the wallet proven', async () => {
    const done = await createOnboardedMerchant(svc, p.testKey);
    const got = await merchantGet(done.id);
    expect(got.body.merchant_id).toMatch(UUID_RE);
    expect(got.body).toMatchObject({ onboarding_status: 'complete', onboarding_url: null, wallet_address: done.wallet.address.toLowerCase() });
  });
});


describe('onboarding links expire after ONBOARDING_LINK_TTL_HOURS (issue 10 point 4)', () => {
  const TTL_HOURS = 168;
  /** Moves the link's issue time back, as if it had been issued that many hours ago. */
  const issuedHoursAgo = (id: string, hours: number) =>
    sql(`UPDATE merchants SET onboarding_link_issued_at = now() - make_interval(hours => $2) WHERE id = $1`, [id, hours]);
  const row = async (id: string) =>
    (await sql(`SELECT onboarding_token_hash, onboarding_link_issued_at, wallet_verified_at, onboarding_nonce FROM merchants WHERE id = $1`, [id]))[0];
  const EXPIRED = { ok: false, error: 'onboarding_link_expired' };

  it('shows every new merchant the link with its issue time; a link inside its TTL still works', async () => {
    const m = await createShellMerchant(svc, p.testKey, {});
    const stored = await row(m.merchant_id);
    expect(Math.abs(new Date(stored.onboarding_link_issued_at).getTime() - Date.now())).toBeLessThan(60_000);
    await issuedHoursAgo(m.merchant_id, TTL_HOURS - 1);
    expect((await state(tokenOf(m.onboarding_url))).status).toBe(200);
    expect((await merchantGet(m.merchant_id)).body.onboarding_url).toBe(m.onboarding_url);
  });

  it('an expired link answers 410 onboarding_link_expired on every onboarding call, and changes nothing', async () => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address });
    const token = tokenOf(m.onboarding_url);
    const proof = await siweProof(svc, token, w); // signed while the link still worked
    await issuedHoursAgo(m.merchant_id, TTL_HOURS);
    const before = await row(m.merchant_id);
    for (const r of [await state(token), await proveWallet(token, proof), await complete(token, { accept_terms: true })]) {
      expect(r.status).toBe(410);
      expect(r.body).toEqual(EXPIRED);
    }
    expect(await row(m.merchant_id)).toEqual(before);
    expect(before.wallet_verified_at).toBeNull();
    // The page says so in words, and tells the merchant whom to ask.
    const page = await call(svc.publicUrl, 'GET', `/onboarding/${token}`);
    expect(page.status).toBe(410);
    expect(page.text).toContain('This onboarding link has expired');
    expect(page.text).toContain('Ask the partner who sent you this link for a new one');
    // An unknown token stays a 404.
    expect((await state('B'.repeat(43))).status).toBe(404);
  });

  it('a read after expiry shows a new link (GET, list, replayed create alike); the old one is dead, the new one completes', async () => {
    const w = randomWallet();
    const m = await createShellMerchant(svc, p.testKey, { wallet_address: w.address, display_name: 'Late Shop' });
    const oldToken = tokenOf(m.onboarding_url);
    await issuedHoursAgo(m.merchant_id, TTL_HOURS + 24);
    const oldHash = (await row(m.merchant_id)).onboarding_token_hash;

    // Concurrent reads after expiry agree on one new link.
    const reads = await Promise.all(Array.from({ length: 5 }, () => merchantGet(m.merchant_id)));
    const urls = new Set(reads.map((r) => r.body.onboarding_url));
    expect(urls.size).toBe(1);
    const fresh = reads[0].body;
    expect(fresh).toEqual({ ...m, onboarding_url: expect.stringMatching(new RegExp(`^${svc.config.publicUrl}/onboarding/[A-Za-z0-9_-]{43}$`)) });
    expect(fresh.onboarding_url).not.toBe(m.onboarding_url);
    const stored = await row(m.merchant_id);
    expect(Buffer.from(stored.onboarding_token_hash).equals(Buffer.from(oldHash))).toBe(false);
    expect(Math.abs(new Date(stored.onboarding_link_issued_at).getTime() - Date.now())).toBeLessThan(60_000);

    // The list and an idempotent replay of the create show the same working link.
    const listed = await call(svc.publicUrl, 'GET', '/api/v1/merchants?onboarding_status=incomplete&limit=100', { key: p.testKey });
    expect(listed.body.merchants.find((x: any) => x.merchant_id === m.merchant_id).onboarding_url).toBe(fresh.onboarding_url);
    const replay = await call(svc.publicUrl, 'POST', '/api/v1/merchants', { key: p.testKey, body: { wallet_address: w.address, display_name: 'Late Shop' } });
    expect(replay.status).toBe(200);
    expect(replay.body.onboarding_url).toBe(fresh.onboarding_url);

    // The old link stays expired (410, not "unknown"), the new one works to the end.
    expect(await state(oldToken)).toMatchObject({ status: 410, body: EXPIRED });
    const newToken = tokenOf(fresh.onboarding_url);
    expect((await proveWallet(newToken, await siweProof(svc, newToken, w))).status).toBe(200);
    expect((await complete(newToken, { accept_terms: true })).status).toBe(200);

    // A completed onboarding's links keep their behaviour: 404, and no new link however old the issue time.
    await issuedHoursAgo(m.merchant_id, TTL_HOURS * 10);
    expect((await merchantGet(m.merchant_id)).body.onboarding_url).toBeNull();
    for (const t of [newToken, oldToken]) expect(await state(t)).toMatchObject({ status: 404, body: { ok: false, error: 'not_found' } });
  });

  it('an expired link of a completed merchant is not reissued by the admin surface either', async () => {
    const done = await createOnboardedMerchant(svc, p.testKey);
    await issuedHoursAgo(done.id, TTL_HOURS * 2);
    const hash = (await row(done.id)).onboarding_token_hash;
    const disabled = await call(svc.adminUrl, 'POST', `/admin/api/merchants/${done.id}/disable`, { key: ADMIN_TOKEN });
    expect(disabled.status).toBe(200);
    expect(disabled.body.onboarding_url).toBeNull();
    expect(Buffer.from((await row(done.id)).onboarding_token_hash).equals(Buffer.from(hash))).toBe(true);
  });
});
