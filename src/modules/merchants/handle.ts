/**
 * A merchant's public handle (DESIGN §5, §8): 3–20 characters of a–z, 0–9 and `-`, starting with a letter,
 * ending with a letter or digit, no `--`; compared and stored lower-case; not a word the service's own paths
 * or a visitor could mistake for the service.
 */
export const HANDLE_PATTERN = /^[a-z][a-z0-9-]{1,18}[a-z0-9]$/;

export const RESERVED_HANDLES: ReadonlySet<string> = new Set([
  'admin', 'administrator', 'api', 'app', 'apps', 'assets', 'auth', 'billing', 'blog', 'dashboard', 'dev', 'docs',
  'help', 'home', 'info', 'login', 'logout', 'm', 'mail', 'me', 'metrics', 'null', 'onboarding', 'pay', 'payment',
  'payments', 'plan', 'plans', 'portal', 'root', 'security', 'settings', 'signin', 'signup', 'static', 'status',
  'support', 'system', 'terms', 'test', 'undefined', 'www',
]);

/**
 * New handles a merchant may claim in a rolling day: each one is kept from every other merchant forever, so
 * without a cap one merchant could squat on names as fast as it can call.
 */
export const HANDLE_CLAIMS_PER_DAY = 5;
export const HANDLE_CLAIM_WINDOW_MS = 24 * 60 * 60 * 1000;

/** What a handle may be typed with, before lower-casing. */
const HANDLE_INPUT = /^[A-Za-z0-9-]+$/;

/** The handle as stored: lower-cased input (of a handle handleProblem accepted). */
export function normalizeHandle(raw: string): string {
  return raw.toLowerCase();
}

/**
 * Why a handle as typed cannot be used, or null when its form is fine. The input is held to ASCII before it
 * is lower-cased: toLowerCase maps some non-ASCII letters to ASCII (the Kelvin sign U+212A becomes "k"), and
 * such look-alikes must neither claim nor find a handle.
 */
export function handleProblem(raw: string): string | null {
  const handle = normalizeHandle(raw);
  if (!HANDLE_INPUT.test(raw) || !HANDLE_PATTERN.test(handle) || handle.includes('--')) {
    return 'handle must be 3 to 20 characters of a-z, 0-9 and -, start with a letter, end with a letter or digit, and have no --';
  }
  if (RESERVED_HANDLES.has(handle)) return `"${handle}" is reserved`;
  return null;
}
