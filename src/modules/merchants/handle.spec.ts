import { handleProblem, normalizeHandle } from './handle';

describe('handle rules (DESIGN §5, §8)', () => {
  it.each(['abc', 'shop-1', 'a1b', 'my-little-shop-2026', 'abcdefghijklmnopqrst'])('accepts %s', (h) => {
    expect(handleProblem(h)).toBeNull();
  });

  it.each([
    ['too short', 'ab'],
    ['too long', 'abcdefghijklmnopqrstu'],
    ['starts with a digit', '1abc'],
    ['starts with a dash', '-abc'],
    ['ends with a dash', 'abc-'],
    ['a double dash', 'ab--cd'],
    ['an underscore', 'ab_cd'],
    ['a dot', 'ab.cd'],
    ['a space', 'ab cd'],
    ['non-ASCII', 'café'],
    ['reserved', 'admin'],
    ['reserved', 'dashboard'],
    ['reserved', 'pay'],
    ['reserved', 'www'],
  ])('refuses %s (%s)', (_, h) => {
    expect(handleProblem(h)).not.toBeNull();
  });

  it('lower-cases input', () => {
    expect(normalizeHandle('My-Shop')).toBe('my-shop');
    expect(handleProblem('My-Shop')).toBeNull();
    expect(handleProblem('ADMIN')).not.toBeNull();
  });

  it('holds the input to ASCII before lower-casing: the Kelvin sign (U+212A) is not a "k"', () => {
    expect('\u212Aing'.toLowerCase()).toBe('king');
    expect(handleProblem('\u212Aing')).not.toBeNull();
    expect(handleProblem('caf\u00E9')).not.toBeNull();
  });
});
