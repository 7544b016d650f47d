import { dummyHash, hashPassword, passwordProblem, verifyPassword } from './password';

describe('portal passwords', () => {
  it('hashes with scrypt into a self-describing string with a fresh salt each time', async () => {
    const a = await hashPassword('a long enough password');
    const b = await hashPassword('a long enough password');
    expect(a).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{43}\$[A-Za-z0-9+/]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('a long enough password', a)).toBe(true);
    expect(await verifyPassword('a long enough passworD', a)).toBe(false);
    expect(await verifyPassword('', a)).toBe(false);
  });

  it('hashes at a lower cost when asked (PORTAL_PASSWORD_COST in tests), which verification reads from the string', async () => {
    const quick = await hashPassword('a long enough password', 10);
    expect(quick).toMatch(/^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]{43}\$[A-Za-z0-9+/]{43}$/);
    expect(await verifyPassword('a long enough password', quick)).toBe(true);
    expect(await verifyPassword('a long enough passworD', quick)).toBe(false);
  });

  it('reads the cost from the string, and refuses unreadable or absurd ones', async () => {
    const cheap = await hashPassword('x'.repeat(12));
    expect(await verifyPassword('x'.repeat(12), cheap)).toBe(true);
    expect(await verifyPassword('x'.repeat(12), cheap.replace('ln=15', 'ln=14'))).toBe(false);
    expect(await verifyPassword('x'.repeat(12), cheap.replace('ln=15', 'ln=30'))).toBe(false);
    expect(await verifyPassword('x'.repeat(12), 'plaintext')).toBe(false);
    expect(await verifyPassword('x'.repeat(12), '')).toBe(false);
  });

  it('treats the same text in another Unicode normal form as the same password', async () => {
    const composed = 'caf\u00e9 au lait, bitte';
    expect(await verifyPassword(composed.normalize('NFD'), await hashPassword(composed))).toBe(true);
  });

  it('has a dummy hash, made once, that nothing matches', async () => {
    const d = await dummyHash();
    expect(await dummyHash()).toBe(d);
    expect(await verifyPassword('', d)).toBe(false);
  });

  it.each([
    ['11 characters', 'x'.repeat(11), 'password must be 12 to 200 characters'],
    ['201 characters', 'x'.repeat(201), 'password must be 12 to 200 characters'],
    ['12 astral characters (24 UTF-16 units)', '😀'.repeat(12), null],
    ['200 characters', 'x'.repeat(200), null],
    ['a NUL character', `${'x'.repeat(12)}\u0000`, 'password must not contain NUL characters'],
    ['a number', 12345678901234, 'password must be a string'],
  ])('password rule: %s', (_, pw, problem) => {
    expect(passwordProblem(pw)).toBe(problem);
  });
});
