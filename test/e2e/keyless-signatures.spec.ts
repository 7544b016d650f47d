import { SiweMessage } from 'siwe';
import { dashboardMessage, dashboardNonce, postSession } from '../factories/dashboard';
import { createShellMerchant, postMerchant } from '../factories/merchants';
import { createOnboardedMerchant, createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';

/*
 * The zero address has no key, yet a signature check that recovers an address from a garbage signature gets
 * exactly it (ecrecover's failure value): the wallet contract check's plain-account fallback accepted 65 zero
 * bytes for it, so anyone could prove it as a merchant's wallet and then sign in to that merchant's dashboard
 * (a helper's hunt, 2026-11-27). And a sign-in time the parser takes but Date cannot read (second 60) was
 * ignored.
 */
const ZERO = '0x0000000000000000000000000000000000000000';
const GARBAGE = `0x${'00'.repeat(64)}1b`;
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

function onboardingMessage(token: string, nonce: string): string {
  return new SiweMessage({
    domain: new URL(svc.config.publicUrl).host, address: ZERO, statement: 'Connect this wallet to receive payments.',
    uri: `${svc.config.publicUrl}/onboarding/${token}`, version: '1', chainId: 31337, nonce, issuedAt: new Date().toISOString(),
  }).prepareMessage();
}

it('onboarding: the zero address cannot be proved with a garbage signature (400), and stays unnamed', async () => {
  const m = await createShellMerchant(svc, p.testKey, {});
  const token = tokenOf(m.onboarding_url);
  const { nonce } = (await call(svc.publicUrl, 'GET', `/onboarding/api/${token}`)).body;
  const r = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: { message: onboardingMessage(token, nonce), signature: GARBAGE } });
  expect(r.status).toBe(400);
  expect((await sql(`SELECT wallet_address FROM merchants WHERE id = $1`, [m.merchant_id]))[0].wallet_address).toBeNull();
});

it('a merchant create naming the zero address as its wallet → 400 invalid_request, nothing made', async () => {
  const before = (await sql(`SELECT count(*)::int AS n FROM merchants WHERE partner_id = $1`, [p.id]))[0].n;
  for (const wallet of [ZERO, ZERO.toUpperCase().replace('0X', '0x')]) {
    const r = await postMerchant(svc, p.liveKey, { wallet_address: wallet });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_request', errors: [expect.objectContaining({ field: 'wallet_address' })] });
  }
  expect((await sql(`SELECT count(*)::int AS n FROM merchants WHERE partner_id = $1`, [p.id]))[0].n).toBe(before);
});

it('dashboard sign-in as the zero address with a garbage signature → 401, even for a merchant stored with it', async () => {
  const m = await createOnboardedMerchant(svc, p.testKey);
  // As an older release could have stored it.
  await sql(`UPDATE merchants SET wallet_address = $2 WHERE id = $1`, [m.id, ZERO]);
  try {
    const s = await postSession(svc, { message: dashboardMessage(svc, ZERO, await dashboardNonce(svc)), signature: GARBAGE });
    expect(s.status).toBe(401);
  } finally {
    await sql(`UPDATE merchants SET wallet_address = $2 WHERE id = $1`, [m.id, m.wallet.address.toLowerCase()]);
  }
});

it('dashboard sign-in: a not-before in the future is refused, also written as second 60', async () => {
  const m = await createOnboardedMerchant(svc, p.testKey);
  for (const t of ['2099-12-31T23:59:59Z', '2099-12-31T23:59:60Z']) {
    const message = dashboardMessage(svc, m.wallet.address, await dashboardNonce(svc)).replace(/(\nIssued At: .*)$/m, `$1\nNot Before: ${t}`);
    expect((await postSession(svc, { message, signature: await m.wallet.signMessage(message) })).status).toBe(401);
  }
});
