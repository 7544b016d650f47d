import type { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import type { TestService } from '../support/app';
import { call, type Reply } from '../support/http';

export interface SiweOverrides {
  domain?: string;
  uri?: string;
  nonce?: string;
  address?: string;
  chainId?: number;
  expirationTime?: string;
  /** EIP-4361's optional scheme (absent from the message unless given). */
  scheme?: string;
}

/** The EIP-4361 message the dashboard's sign-in page builds (DESIGN §5), with any part overridden. */
export function dashboardMessage(svc: TestService, address: string, nonce: string, o: SiweOverrides = {}): string {
  return new SiweMessage({
    domain: o.domain ?? new URL(svc.config.publicUrl).host,
    address: o.address ?? address,
    statement: 'Sign in to your dashboard.',
    uri: o.uri ?? `${svc.config.publicUrl}/dashboard`,
    version: '1',
    chainId: o.chainId ?? 31337,
    nonce: o.nonce ?? nonce,
    issuedAt: new Date().toISOString(),
    ...(o.expirationTime ? { expirationTime: o.expirationTime } : {}),
    ...(o.scheme ? { scheme: o.scheme } : {}),
  }).prepareMessage();
}

export async function dashboardNonce(svc: TestService): Promise<string> {
  const r = await call(svc.publicUrl, 'GET', '/dashboard/api/nonce');
  if (r.status !== 200) throw new Error(`nonce failed: ${r.status} ${r.text}`);
  return r.body.nonce as string;
}

export function postSession(svc: TestService, body: unknown): Promise<Reply> {
  return call(svc.publicUrl, 'POST', '/dashboard/api/session', { body });
}

/** The session cookie's `name=value` from a sign-in reply. */
export function sessionCookie(r: Reply): string {
  const line = r.headers.getSetCookie().find((c) => c.startsWith('prs_dashboard='));
  if (!line) throw new Error(`no session cookie in ${JSON.stringify(r.headers.getSetCookie())}`);
  return line.split(';')[0];
}

export interface DashboardClient {
  merchantId: string;
  cookie: string;
  csrf: string;
  /** A dashboard API call with the session's cookie, and its CSRF header unless `csrf: false`. */
  call<T = any>(method: string, path: string, opts?: { body?: unknown; csrf?: boolean | string; headers?: Record<string, string> }): Promise<Reply<T>>;
}

/** Signs in as `signer` (a plain account: the merchant's wallet) through the real API. */
export async function signInDashboard(svc: TestService, signer: Wallet): Promise<DashboardClient> {
  const message = dashboardMessage(svc, signer.address, await dashboardNonce(svc));
  const r = await postSession(svc, { message, signature: await signer.signMessage(message) });
  if (r.status !== 200) throw new Error(`dashboard sign-in failed: ${r.status} ${r.text}`);
  return dashboardClient(svc, r.body.merchant_id, sessionCookie(r), r.body.csrf_token);
}

export function dashboardClient(svc: TestService, merchantId: string, cookie: string, csrf: string): DashboardClient {
  return {
    merchantId,
    cookie,
    csrf,
    call: (method, path, opts = {}) => {
      const headers: Record<string, string> = { cookie, ...(opts.headers ?? {}) };
      if (opts.csrf !== false) headers['x-csrf-token'] = typeof opts.csrf === 'string' ? opts.csrf : csrf;
      return call(svc.publicUrl, method, `/dashboard/api${path}`, { body: opts.body, headers });
    },
  };
}
