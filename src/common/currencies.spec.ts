import { fiatExponent, normalizeCurrency } from './currencies';

describe('normalizeCurrency (DESIGN §3: any case accepted, shown lower case)', () => {
  it.each([
    ['usd', 'usd'],
    ['USD', 'usd'],
    ['Usd', 'usd'],
    ['eur', 'eur'],
    ['JPY', 'jpy'],
    ['kwd', 'kwd'],
    ['InR', 'inr'],
    ['gbp', 'gbp'],
    ['chf', 'chf'],
  ])('%s → %s', (code, expected) => {
    expect(normalizeCurrency(code)).toBe(expected);
  });

  it.each([
    ['unknown three letters', 'qqq'],
    ['unknown three letters upper', 'ZZQ'],
    ['two letters', 'us'],
    ['four letters', 'usdd'],
    ['empty', ''],
    ['digits', '840'],
    ['letters and digit', 'us1'],
    ['surrounding space', ' usd'],
    ['trailing newline', 'usd\n'],
    ['non-ASCII letters', 'ü$d'],
    ['unicode look-alike', 'ＵＳＤ'],
  ])('%s → null', (_label, code) => {
    expect(normalizeCurrency(code)).toBeNull();
  });

  it.each([[undefined], [null], [840], [{}], [['usd']]])('non-string %p → null', (v) => {
    expect(normalizeCurrency(v as unknown as string)).toBeNull();
  });
});

describe('fiatExponent (ISO 4217 minor units)', () => {
  it.each([
    ['usd', 2],
    ['eur', 2],
    ['inr', 2],
    ['gbp', 2],
    ['jpy', 0],
    ['krw', 0],
    ['isk', 0],
    ['clp', 0],
    ['vnd', 0],
    ['ugx', 0],
    ['kwd', 3],
    ['bhd', 3],
    ['jod', 3],
    ['omr', 3],
    ['tnd', 3],
    ['iqd', 3],
    ['lyd', 3],
    ['clf', 4],
  ])('%s → %i', (code, exp) => {
    expect(fiatExponent(code)).toBe(exp);
  });

  it('is case-insensitive', () => {
    expect(fiatExponent('JPY')).toBe(0);
    expect(fiatExponent('KWD')).toBe(3);
    expect(fiatExponent('Usd')).toBe(2);
  });

  it('every currency with a listed exponent is one normalizeCurrency knows', () => {
    for (const c of ['jpy', 'krw', 'kwd', 'bhd', 'jod', 'omr', 'tnd', 'iqd', 'lyd', 'isk', 'clp', 'vnd', 'ugx']) {
      expect(normalizeCurrency(c)).toBe(c);
    }
  });
});
