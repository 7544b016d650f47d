import { fiatToTokenAmount, parseDecimal } from './amount';

/*
 * DESIGN §3: amount = ceil(fiat_minor × 10^token_decimals ÷ (rate × 10^fiat_exponent)), exactly.
 * The expected values are computed here on their own: the rate string is split by hand into an integer
 * numerator over a power of ten, and the ceiling is taken from a quotient and a remainder.
 */
function pow10(n: number): bigint {
  let r = 1n;
  for (let i = 0; i < n; i++) r *= 10n;
  return r;
}

/** rate "150.25" → { n: 15025n, d: 100n }, i.e. rate = n / d. */
function rateFraction(rate: string): { n: bigint; d: bigint } {
  const [whole, frac = ''] = rate.split('.');
  return { n: BigInt(whole) * pow10(frac.length) + (frac ? BigInt(frac) : 0n), d: pow10(frac.length) };
}

function expectedAmount(fiatMinor: bigint, exponent: number, decimals: number, rate: string): bigint {
  const { n, d } = rateFraction(rate);
  // fiat_minor / 10^exp fiat units, divided by n/d fiat units per token, times 10^decimals base units per token.
  const num = fiatMinor * d * pow10(decimals);
  const den = n * pow10(exponent);
  const q = num / den;
  const r = num % den;
  return r === 0n ? q : q + 1n;
}

const CURRENCIES = [
  { code: 'usd', exponent: 2 },
  { code: 'jpy', exponent: 0 },
  { code: 'kwd', exponent: 3 },
  { code: 'inr', exponent: 2 },
] as const;
const RATES = ['1', '0.92', '150.25', '83.2', '0.307'];
const DECIMALS = [6, 18];
const FIAT = [1n, 2147483647n];

describe('fiatToTokenAmount over currencies, rates, decimals and the extreme amounts', () => {
  const cases = CURRENCIES.flatMap((c) =>
    RATES.flatMap((rate) => DECIMALS.flatMap((dec) => FIAT.map((fiat) => [c.code, c.exponent, rate, dec, fiat] as const))),
  );

  it.each(cases)('%s (exp %i) at rate %s, %i decimals, %s minor units', (_code, exponent, rate, decimals, fiat) => {
    const amount = fiatToTokenAmount(fiat, exponent, decimals, rate);
    expect(amount).toBe(expectedAmount(fiat, exponent, decimals, rate));
    // The ceiling, stated as bounds: amount tokens are worth at least the fiat, one base unit less is worth less.
    const { n, d } = rateFraction(rate);
    const fiatScaled = fiat * d * pow10(decimals); // fiat value × d × 10^dec × 10^exp, in the same units as below
    const worth = (a: bigint) => a * n * pow10(exponent);
    expect(worth(amount) >= fiatScaled).toBe(true);
    expect(worth(amount - 1n) < fiatScaled).toBe(true);
    expect(amount > 0n).toBe(true);
  });

  it('accepts the fiat amount as number or bigint alike', () => {
    for (const c of CURRENCIES) {
      expect(fiatToTokenAmount(2147483647, c.exponent, 18, '0.307')).toBe(fiatToTokenAmount(2147483647n, c.exponent, 18, '0.307'));
    }
  });
});

describe('fiatToTokenAmount: values worked out by hand', () => {
  it.each([
    // 1 cent at 1 USD per token = 0.01 token = 10 000 base units of a 6-decimal token.
    ['usd 1 cent, rate 1, 6 dec', 1n, 2, 6, '1', 10000n],
    ['usd 12.34, rate 1, 6 dec', 1234n, 2, 6, '1', 12340000n],
    ['usd max, rate 1, 6 dec', 2147483647n, 2, 6, '1', 21474836470000n],
    ['usd max, rate 1, 18 dec', 2147483647n, 2, 18, '1', 21474836470000000000000000n],
    // 10.00 EUR / 0.92 = 10.869565217… tokens → 10 869 565.217… → rounded up.
    ['eur 10.00, rate 0.92, 6 dec', 1000n, 2, 6, '0.92', 10869566n],
    // 1 yen / 150.25 = 0.0066555740… tokens → 6 655.574… → 6 656.
    ['jpy 1, rate 150.25, 6 dec', 1n, 0, 6, '150.25', 6656n],
    ['jpy 1000, rate 150.25, 6 dec', 1000n, 0, 6, '150.25', 6655575n],
    // 1 fils = 0.001 KWD; / 0.307 = 0.0032573289… tokens → 3 257.33 → 3 258.
    ['kwd 1 fils, rate 0.307, 6 dec', 1n, 3, 6, '0.307', 3258n],
    ['kwd 1.000, rate 0.307, 6 dec', 1000n, 3, 6, '0.307', 3257329n],
    // 1 paisa = 0.01 INR; / 83.2 = 0.00012019230… tokens → 120.19 → 121.
    ['inr 1 paisa, rate 83.2, 6 dec', 1n, 2, 6, '83.2', 121n],
    // Exact divisions are not rounded up: 83.20 INR at 83.2 is exactly one token.
    ['inr 83.20, rate 83.2, 6 dec', 8320n, 2, 6, '83.2', 1000000n],
    ['jpy 15025, rate 150.25, 6 dec', 15025n, 0, 6, '150.25', 100000000n],
    // 18 decimals: 1 yen / 150.25 = 6 655 574 043 261 231.28… → …232.
    ['jpy 1, rate 150.25, 18 dec', 1n, 0, 18, '150.25', 6655574043261232n],
  ] as const)('%s → %s', (_label, fiat, exponent, decimals, rate, expected) => {
    expect(fiatToTokenAmount(fiat, exponent, decimals, rate)).toBe(expected);
  });

  it('rounds up even by the smallest possible fraction', () => {
    // 1 cent at 3 fiat per token, 0 decimals: 0.00333… of a token → 1 whole base unit.
    expect(fiatToTokenAmount(1, 2, 0, '3')).toBe(1n);
    // 300 cents at 3 per token, 0 decimals: exactly 1.
    expect(fiatToTokenAmount(300, 2, 0, '3')).toBe(1n);
    // 301 cents: 1.0033… → 2.
    expect(fiatToTokenAmount(301, 2, 0, '3')).toBe(2n);
  });

  it('treats trailing zeros in the rate as the same rate', () => {
    expect(fiatToTokenAmount(1234, 2, 6, '0.920')).toBe(fiatToTokenAmount(1234, 2, 6, '0.92'));
    expect(fiatToTokenAmount(1234, 2, 6, '1.000000')).toBe(12340000n);
  });
});

describe('fiatToTokenAmount: refuses what it cannot price', () => {
  it.each([
    ['zero fiat', 0, '1'],
    ['negative fiat', -1, '1'],
    ['zero rate', 100, '0'],
    ['zero rate with decimals', 100, '0.000'],
    ['rate not a decimal', 100, 'abc'],
    ['negative rate', 100, '-1'],
    ['exponent notation', 100, '1e3'],
    ['empty rate', 100, ''],
  ] as const)('%s', (_label, fiat, rate) => {
    expect(() => fiatToTokenAmount(fiat, 2, 6, rate)).toThrow();
  });
});

describe('parseDecimal', () => {
  it.each([
    ['1', 1n, 1n],
    ['0.92', 92n, 100n],
    ['150.25', 15025n, 100n],
    ['83.2', 832n, 10n],
    ['0.307', 307n, 1000n],
  ] as const)('%s = %s / %s', (raw, num, scale) => {
    expect(parseDecimal(raw)).toEqual({ num, scale });
  });
});
