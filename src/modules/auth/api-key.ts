import { hash, randomBytes } from 'node:crypto';
import type { Mode } from '../../config/config';
import type { Scope } from './scopes';

/** What a valid key stands for; cached in process. */
export interface Principal {
  keyId: string;
  partnerId: string;
  partnerSlug: string;
  mode: Mode;
  scopes: ReadonlySet<Scope>;
  defaultCurrency: string;
  allowedExpiryMinutes: number[];
  defaultExpiryMinutes: number;
}

export function hashApiKey(raw: string): Buffer {
  return hash('sha256', raw, 'buffer');
}

/**
 * The same digest in hex, as the in-process key cache is keyed: every partner-API call computes it. The one-shot
 * crypto.hash costs 0.4 µs here where a Hash object (createHash … digest) costs 3.5 µs.
 */
export function hashApiKeyHex(raw: string): string {
  return hash('sha256', raw, 'hex');
}

/** A new key: `<prefix>_<mode>_<43 chars of base64url = 32 random bytes>`. */
export function generateApiKey(prefix: string, mode: Mode): { raw: string; hash: Buffer; displayPrefix: string } {
  const raw = `${prefix}_${mode}_${randomBytes(32).toString('base64url')}`;
  return { raw, hash: hashApiKey(raw), displayPrefix: raw.slice(0, prefix.length + mode.length + 2 + 6) };
}

/** The mode the prefix names, or null when the key is not of our form (the prefix is authoritative, §5). */
export function modeOfKey(prefix: string, raw: string): Mode | null {
  if (raw.startsWith(`${prefix}_test_`)) return 'test';
  if (raw.startsWith(`${prefix}_live_`)) return 'live';
  return null;
}

/** A key as its partner sees it: everything but the key itself. */
export interface ApiKeyInfo {
  id: string;
  mode: Mode;
  scopes: Scope[];
  displayPrefix: string;
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

/** A key just issued: the only time the key itself is known. */
export interface IssuedKey extends ApiKeyInfo {
  apiKey: string;
}
