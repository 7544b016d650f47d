import { randomBytes } from 'node:crypto';
import { isSealed, SecretBox } from './secret-box';

describe('SecretBox', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);
  const secret = 'a'.repeat(64);

  it('seals to a form that holds no trace of the secret, and opens it again', () => {
    const box = new SecretBox(k1);
    const sealed = box.seal(secret, 'partner-1');
    expect(isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain(secret);
    expect(box.open(sealed, 'partner-1')).toBe(secret);
  });

  it('uses a fresh IV every time', () => {
    const box = new SecretBox(k1);
    expect(box.seal(secret, 'p')).not.toBe(box.seal(secret, 'p'));
  });

  it('refuses another context (a ciphertext copied to another partner)', () => {
    const box = new SecretBox(k1);
    expect(() => box.open(box.seal(secret, 'partner-1'), 'partner-2')).toThrow();
  });

  it('refuses an altered ciphertext', () => {
    const box = new SecretBox(k1);
    const sealed = box.seal(secret, 'p');
    const i = sealed.length - 3;
    const altered = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1);
    expect(() => box.open(altered, 'p')).toThrow();
  });

  it('opens under the previous key during a rotation, seals under the new one, and says what is stale', () => {
    const old = new SecretBox(k1).seal(secret, 'p');
    const rotating = new SecretBox(k2, k1);
    expect(rotating.open(old, 'p')).toBe(secret);
    expect(rotating.isStale(old)).toBe(true);
    const fresh = rotating.seal(secret, 'p');
    expect(rotating.isStale(fresh)).toBe(false);
    expect(new SecretBox(k2).open(fresh, 'p')).toBe(secret);
  });

  it('names the missing key when a secret was sealed under a key no longer given', () => {
    const old = new SecretBox(k1).seal(secret, 'p');
    expect(() => new SecretBox(k2).open(old, 'p')).toThrow(/SECRET_KEY_PREVIOUS/);
  });

  it('refuses plaintext, truncated values and keys of the wrong size', () => {
    const box = new SecretBox(k1);
    expect(() => box.open(secret, 'p')).toThrow('not a sealed secret');
    expect(() => box.open(box.seal(secret, 'p').slice(0, 20), 'p')).toThrow();
    expect(() => new SecretBox(randomBytes(16))).toThrow('32 bytes');
  });
});
