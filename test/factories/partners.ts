import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { ADMIN_TOKEN, type TestService } from '../support/app';
import { call } from '../support/http';

export interface TestPartner {
  id: string;
  slug: string;
  testKey: string;
  liveKey: string;
}

export function uniqueSlug(prefix = 'p'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export async function admin<T = any>(svc: TestService, method: string, path: string, body?: unknown) {
  return call<T>(svc.adminUrl, method, `/admin/api${path}`, { key: ADMIN_TOKEN, body });
}

/** A partner with one test key and one live key of all scopes. */
export async function createPartner(
  svc: TestService,
  body: Record<string, unknown> = {},
): Promise<TestPartner> {
  const slug = uniqueSlug();
  const p = await admin(svc, 'POST', '/partners', { slug, name: `Partner ${slug}`, default_currency: 'usd', ...body });
  if (p.status !== 201) throw new Error(`partner create failed: ${p.status} ${p.text}`);
  const id = p.body.partner_id as string;
  const testKey = await admin(svc, 'POST', `/partners/${id}/keys`, { mode: 'test' });
  const liveKey = await admin(svc, 'POST', `/partners/${id}/keys`, { mode: 'live' });
  return { id, slug, testKey: testKey.body.api_key, liveKey: liveKey.body.api_key };
}

export async function createKey(svc: TestService, partnerId: string, body: Record<string, unknown>): Promise<string> {
  const r = await admin(svc, 'POST', `/partners/${partnerId}/keys`, body);
  if (r.status !== 201) throw new Error(`key create failed: ${r.status} ${r.text}`);
  return r.body.api_key as string;
}

/** Signs the EIP-4361 message the onboarding API asks for, as a wallet would. */
export async function signOnboarding(svc: TestService, token: string, wallet: Wallet, nonceOverride?: string) {
  const state = await call(svc.publicUrl, 'GET', `/onboarding/api/${token}`);
  const msg = new SiweMessage({
    domain: state.body.siwe.domain,
    address: wallet.address,
    statement: 'Connect this wallet to receive payments.',
    uri: state.body.siwe.uri,
    version: '1',
    chainId: 31337,
    nonce: nonceOverride ?? state.body.nonce,
    issuedAt: new Date().toISOString(),
  });
  const message = msg.prepareMessage();
  return { message, signature: await wallet.signMessage(message) };
}

export function tokenOf(onboardingUrl: string): string {
  return onboardingUrl.split('/').pop()!;
}

/**
 * A merchant taken through the real onboarding flow (wallet proof by SIWE signature, terms accepted).
 * Returns its id and the wallet that receives its payments.
 */
export async function createOnboardedMerchant(
  svc: TestService,
  apiKey: string,
  body: Record<string, unknown> = {},
  wallet: Wallet = Wallet.createRandom() as unknown as Wallet,
): Promise<{ id: string; wallet: Wallet; merchant: any }> {
  const created = await call(svc.publicUrl, 'POST', '/api/v1/merchants', {
    key: apiKey,
    body: { display_name: 'Test Shop', wallet_address: wallet.address, ...body },
  });
  if (created.status !== 201) throw new Error(`merchant create failed: ${created.status} ${created.text}`);
  const token = tokenOf(created.body.onboarding_url);
  const proof = await signOnboarding(svc, token, wallet);
  const w = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: proof });
  if (w.status !== 200) throw new Error(`wallet proof failed: ${w.status} ${w.text}`);
  const done = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });
  if (done.status !== 200) throw new Error(`onboarding complete failed: ${done.status} ${done.text}`);
  return { id: created.body.merchant_id, wallet, merchant: done.body.merchant };
}
