import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Secrets at rest (webhook signing secrets) under AES-256-GCM. Stored form:
 * `enc:v1:<key id>:<base64 of iv | tag | ciphertext>`, where the key id (8 hex of the key's SHA-256) picks the
 * key during a rotation (SECRET_KEY, then SECRET_KEY_PREVIOUS). `context` is bound as associated data (e.g.
 * the partner id), so a ciphertext copied to another row does not decrypt.
 */
export class SecretBox {
  private readonly keys: Array<{ id: string; key: Buffer }>;

  /** `current` encrypts; every key given decrypts. Keys are 32 bytes. */
  constructor(current: Buffer, ...previous: Array<Buffer | undefined>) {
    this.keys = [current, ...previous.filter((k): k is Buffer => !!k)].map((key) => {
      if (key.length !== 32) throw new Error('a secret key is 32 bytes');
      return { id: keyId(key), key };
    });
  }

  seal(plaintext: string, context: string): string {
    const { id, key } = this.keys[0];
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${PREFIX}${id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** Throws when the value is not sealed, was sealed under a key not given, for another context, or altered. */
  open(sealed: string, context: string): string {
    if (!isSealed(sealed)) throw new Error('not a sealed secret');
    const [id, data] = sealed.slice(PREFIX.length).split(':');
    const entry = this.keys.find((k) => k.id === id);
    if (!entry) throw new Error(`sealed under an unknown key (${id}): set SECRET_KEY_PREVIOUS to the key it was sealed with`);
    const raw = Buffer.from(data ?? '', 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', entry.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  /** True when the value was sealed under a key other than the current one (re-seal it during a key rotation). */
  isStale(sealed: string): boolean {
    return !isSealed(sealed) || sealed.slice(PREFIX.length).split(':')[0] !== this.keys[0].id;
  }
}

export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}
