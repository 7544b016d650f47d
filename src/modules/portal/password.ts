import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Portal passwords: scrypt (memory-hard) with N = 2^15, r = 8, p = 1 and a 32-byte salt, stored as a
 * self-describing PHC-style string `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (unpadded base64), so the cost can
 * be raised later without breaking stored hashes: verification reads the parameters from the string.
 */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;

/** The scrypt cost (log2 N) of new hashes unless PORTAL_PASSWORD_COST lowers it in development or tests. */
export const PASSWORD_COST = 15;
const R = 8;
const P = 1;
const SALT_BYTES = 32;
const KEY_BYTES = 32;
/** Highest cost a stored string may ask for: a tampered row must not make verification eat gigabytes. */
export const MAX_PASSWORD_COST = 17;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number, keyLen: number): Promise<Buffer> {
  const N = 2 ** logN;
  // scrypt needs 128·N·r bytes; the default maxmem (32 MiB) is exactly that for N=2^15, r=8, which Node
  // refuses, so the limit is raised to twice the need.
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keyLen, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

/** Why a password is refused, or null when it is acceptable. Lengths count characters, not bytes. */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string') return 'password must be a string';
  const length = [...password].length;
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) return `password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`;
  if (password.includes('\u0000')) return 'password must not contain NUL characters';
  return null;
}

export async function hashPassword(password: string, logN = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, logN, R, P, KEY_BYTES);
  return `$scrypt$ln=${logN},r=${R},p=${P}$${b64(salt)}$${b64(key)}`;
}

const STORED = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,})\$([A-Za-z0-9+/]{16,})$/;

/** True when the password matches the stored string; false for a mismatch or an unreadable string. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = STORED.exec(stored);
  if (!m) return false;
  const [logN, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (logN < 1 || logN > MAX_PASSWORD_COST || r < 1 || p < 1) return false;
  const salt = Buffer.from(m[4], 'base64');
  const expected = Buffer.from(m[5], 'base64');
  const actual = await derive(password, salt, logN, r, p, expected.length);
  return timingSafeEqual(actual, expected);
}

/** The cost (log2 N) a stored string was hashed with; null for an unreadable one. */
export function storedCost(stored: string): number | null {
  const m = STORED.exec(stored);
  return m ? Number(m[1]) : null;
}

const dummies = new Map<number, Promise<string>>();

/**
 * A hash of a random password with the current parameters (cost `logN`), made once per process and cost.
 * Verifying an unknown email's attempt against it costs what a real verification costs, so response times do
 * not tell which emails have an account.
 */
export function dummyHash(logN = PASSWORD_COST): Promise<string> {
  let dummy = dummies.get(logN);
  if (!dummy) {
    dummy = hashPassword(randomBytes(24).toString('base64'), logN);
    dummies.set(logN, dummy);
  }
  return dummy;
}
