/**
 * Seeds the service under test through its real APIs, as test/factories/partners.ts does: a partner and a
 * test key through the admin API, a merchant through the partner API, then the merchant's onboarding (SIWE
 * wallet proof signed by a fresh wallet, terms accepted). Copied rather than imported: the factories carry the
 * test suite's fixed admin token and would load the whole Nest app into the load generator's process.
 */
import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';

export interface Target {
  publicUrl: string;
  adminUrl: string;
  adminToken: string;
}

export interface Seeded {
  partnerId: string;
  apiKey: string;
  merchantId: string;
  /** The merchant's wallet (a dashboard sign-in signs with it). */
  wallet: Pick<Wallet, 'address' | 'signMessage'>;
}

interface Reply {
  status: number;
  body: any;
  text: string;
}

export async function call(base: string, method: string, path: string, opts: { key?: string; body?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

function expect(r: Reply, status: number, what: string): void {
  if (r.status !== status) throw new Error(`${what} failed: ${r.status} ${r.text.slice(0, 500)}`);
}

export async function seed(t: Target): Promise<Seeded> {
  const slug = `bench-${randomBytes(5).toString('hex')}`;
  const admin = (method: string, path: string, body?: unknown) =>
    call(t.adminUrl, method, `/admin/api${path}`, { key: t.adminToken, body });

  const partner = await admin('POST', '/partners', { slug, name: `Bench ${slug}`, default_currency: 'usd' });
  expect(partner, 201, 'partner create');
  const partnerId = partner.body.partner_id as string;
  const key = await admin('POST', `/partners/${partnerId}/keys`, { mode: 'test', label: 'bench' });
  expect(key, 201, 'key create');
  const apiKey = key.body.api_key as string;

  const wallet = Wallet.createRandom();
  const merchant = await call(t.publicUrl, 'POST', '/api/v1/merchants', {
    key: apiKey,
    body: { display_name: 'Bench Shop', wallet_address: wallet.address },
  });
  expect(merchant, 201, 'merchant create');
  const token = String(merchant.body.onboarding_url).split('/').pop()!;

  const state = await call(t.publicUrl, 'GET', `/onboarding/api/${token}`);
  expect(state, 200, 'onboarding state');
  const message = new SiweMessage({
    domain: state.body.siwe.domain,
    address: wallet.address,
    statement: 'Connect this wallet to receive payments.',
    uri: state.body.siwe.uri,
    version: '1',
    chainId: 31337,
    nonce: state.body.nonce,
    issuedAt: new Date().toISOString(),
  }).prepareMessage();
  const proof = await call(t.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, {
    body: { message, signature: await wallet.signMessage(message) },
  });
  expect(proof, 200, 'onboarding wallet proof');
  const done = await call(t.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });
  expect(done, 200, 'onboarding complete');
  return { partnerId, apiKey, merchantId: merchant.body.merchant_id as string, wallet };
}

/** Runs fn(i) for i in [0, n) with at most `parallel` in flight; returns the results in order. */
export async function inParallel<T>(n: number, parallel: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}
