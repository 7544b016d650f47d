import { api, ApiError, type HttpMethod } from '../lib/api';

/**
 * The dashboard's calls to /dashboard/api (DESIGN §5). The session cookie is HttpOnly; the CSRF token that
 * every change needs comes in the sign-in response and is kept in this tab's sessionStorage; every page load
 * also reads it from GET /dashboard/api/session, so a reload or a new tab recovers it.
 */
const CSRF_KEY = 'dashboard.csrf_token';

export function rememberCsrf(token: string | undefined | null): void {
  if (typeof token !== 'string' || !token) return;
  try {
    sessionStorage.setItem(CSRF_KEY, token);
  } catch {
    memoryCsrf = token;
  }
}

let memoryCsrf: string | null = null;

function csrf(): string | null {
  try {
    return sessionStorage.getItem(CSRF_KEY) ?? memoryCsrf;
  } catch {
    return memoryCsrf;
  }
}

export function forgetCsrf(): void {
  memoryCsrf = null;
  try {
    sessionStorage.removeItem(CSRF_KEY);
  } catch {
    // Storage blocked: nothing was kept there.
  }
}

export const SIGN_IN_PATH = '/dashboard/sign-in';

/** To the sign-in page, coming back here afterwards. */
export function goToSignIn(): void {
  const here = `${location.pathname}${location.search}`;
  location.assign(`${SIGN_IN_PATH}?next=${encodeURIComponent(here)}`);
}

/** A signed-in call: reads carry the cookie; changes carry the CSRF header too. A 401 leads to the sign-in page. */
export async function dash<T = Record<string, any>>(method: HttpMethod, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const token = method === 'GET' ? null : csrf();
  try {
    return await api<T>(method, `/dashboard/api${path}`, body, token ? { 'x-csrf-token': token, ...headers } : headers);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && e.code === 'unauthorized') {
      forgetCsrf();
      goToSignIn();
      // The page is leaving; callers must not show an error meanwhile.
      return new Promise<T>(() => undefined);
    }
    throw e;
  }
}

/** Where sign-in goes on success: the `next` the sign-in page was given, when it is a dashboard path. */
export function afterSignIn(): string {
  const next = new URLSearchParams(location.search).get('next');
  return next && /^\/dashboard(\/|\?|$)/.test(next) && !next.startsWith(SIGN_IN_PATH) ? next : '/dashboard';
}
