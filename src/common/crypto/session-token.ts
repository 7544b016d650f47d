import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Session cookies and CSRF tokens (portal and dashboard): 32 random bytes, base64url. */
export const SESSION_TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What a session row is keyed by: the SHA-256 of its cookie's token, so the table holds no usable cookie. */
export function sessionKey(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Constant-time equality of two tokens of any length (hashed first, so lengths leak nothing either). */
export function sameToken(a: unknown, b: string): boolean {
  if (typeof a !== 'string' || a.length === 0 || a.length > 256) return false;
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
