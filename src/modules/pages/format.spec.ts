import { amountProblem, formatFiat, formatTokenUnits, parseFiat } from './format';

describe('formatFiat', () => {
  it.each([
    [1234, 'usd', '$12.34'],
    [5, 'usd', '$0.05'],
    [123456789, 'usd', '$1,234,567.89'],
    [1500, 'jpy', '¥1,500'],
    [1250, 'kwd', 'KWD 1.250'],
    [8320, 'inr', '₹83.20'],
    [2147483647, 'eur', '€21,474,836.47'],
  ])('%d %s → %s', (minor, currency, shown) => {
    expect(formatFiat(minor, currency).replace(/\u00a0/g, ' ')).toBe(shown);
  });
});

describe('formatTokenUnits', () => {
  it.each([
    ['12340000', 6, '12.34'],
    ['12340001', 6, '12.340001'],
    ['1', 6, '0.000001'],
    ['0', 6, '0'],
    ['1000000', 6, '1'],
    ['1234500000000000000000', 18, '1,234.5'],
    // Beyond 2^53: a float would round the last digits.
    ['123456789012345678901234567890', 18, '123,456,789,012.34567890123456789'],
    ['42', 0, '42'],
  ])('%s with %d decimals → %s', (units, decimals, shown) => {
    expect(formatTokenUnits(units, decimals)).toBe(shown);
  });
});

describe('parseFiat', () => {
  it.each([
    ['12.34', 'usd', 1234],
    ['12.5', 'usd', 1250],
    [' 1,250 ', 'usd', 125000],
    ['0.1', 'usd', 10],
    ['1500', 'jpy', 1500],
    ['1.25', 'kwd', 1250],
    ['1.2', 'kwd', 1200],
    ['0,5', 'eur', 50],
    ['21474836.47', 'eur', 2147483647],
    // A decimal comma, as most of Europe writes it (it was read as grouping: "12,50" € became 1,250 €).
    ['12,50', 'eur', 1250],
    ['0,99', 'usd', 99],
    ['1,5', 'usd', 150],
    ['1.250,50', 'eur', 125050],
    ['1,250,000.5', 'usd', 125000050],
    ['1.250.000', 'eur', 125000000],
    ['1 250,50', 'eur', 125050],
    ['1\u202f250,50', 'eur', 125050],
    ["1'250.50", 'chf', 125050],
    ['1,500', 'jpy', 1500],
    ['1,250.500', 'kwd', 1250500],
    ['1,25', 'kwd', 1250],
    // Under one dinar: a whole part of 0 is never a group, so three decimals read one way only (they were refused:
    // 0.255 KWD could not be typed at all).
    ['0.255', 'kwd', 255],
    ['0,255', 'kwd', 255],
    ['0.005', 'bhd', 5],
    // Zeros past the currency's digits: the way to type 1.255 dinars, which "1.255" cannot say for sure.
    ['1.2550', 'kwd', 1255],
    ['1,2550', 'kwd', 1255],
    ['1500.00', 'jpy', 1500],
    ['1,500.00', 'jpy', 1500],
    ['12,50', 'usd', 1250],
    ['0,5000', 'eur', 50],
    // The decimal mark is the last of two: zeros after it are only zeros.
    ['1,250.5000', 'usd', 125050],
    ['1.250,500', 'eur', 125050],
    // A whole part of 0 is never a group: half a euro.
    ['0,500', 'eur', 50],
  ])('%s %s → %d', (text, currency, minor) => {
    expect(parseFiat(text, currency)).toBe(minor);
  });

  it.each([['', 'usd'], ['0', 'usd'], ['-5', 'usd'], ['1.234', 'usd'], ['1.5', 'jpy'], ['abc', 'usd'], ['1e3', 'usd'], ['21474836.48', 'eur'],
    // Not whole groups of three, or a mark twice where it can only be the decimal one.
    ['12,50.00', 'usd'], ['1,2345', 'usd'], ['1.250,5.0', 'eur'], ['1 25', 'usd'], ['1 250,000', 'usd'], ['1,5', 'jpy'],
    // Read two ways with three decimals: 1.250 or 1250 dinars.
    ['1,250', 'kwd'], ['1.250', 'kwd'], ['00.255', 'kwd'], ['0.000', 'kwd'],
    // Groups never start with 0.
    ['00,500', 'usd'], ['0 500', 'usd'], ['012,500', 'usd'],
    // Digits past the currency's that are not zeros.
    ['12.501', 'usd'], ['1.25501', 'kwd'], ['1.50', 'jpy'],
    // Zeros after one mark followed by three digits: 1.50 euros, or 1500 to whoever groups with ".".
    ['1.500', 'eur'], ['12.500', 'usd'], ['1.000', 'jpy'],
    // Nor after one mark followed by more than three digits in a currency of fewer than three decimals: that is a
    // thousands group typed with a digit too many as often as decimals, and "1,000" reads 1000 ("1,0000" was $1.00,
    // "100,0000" $100.00). Only the currencies whose "1.255" reads two ways need the zeros.
    ['1,0000', 'usd'], ['100,0000', 'usd'], ['1,5000', 'usd'], ['12.5000', 'usd'], ['1.0000', 'eur'], ['1,0000', 'jpy'], ['12,00000', 'inr']])(
    'refuses %j in %s',
    (text, currency) => {
      expect(parseFiat(text, currency)).toBeNull();
    },
  );
});

describe('amountProblem', () => {
  it('names both readings of an amount read two ways, and how to type each', () => {
    expect(amountProblem(' 1.255 ', 'kwd', '12.50')).toBe(`"1.255" reads two ways: type 1.2550 for ${formatFiat(1255, 'kwd')}, or 1255 for ${formatFiat(1255000, 'kwd')}.`);
    expect(amountProblem('1,250', 'bhd', '12.50')).toBe(`"1,250" reads two ways: type 1,2500 for ${formatFiat(1250, 'bhd')}, or 1250 for ${formatFiat(1250000, 'bhd')}.`);
    expect(formatFiat(1255, 'kwd')).toMatch(/^KWD\s1\.255$/);
  });

  it('otherwise says what to type', () => {
    expect(amountProblem('abc', 'kwd', '12.50')).toBe('Enter a positive amount in KWD, for example 12.50.');
    expect(amountProblem('1.255', 'usd', '25.00')).toBe('Enter a positive amount in USD, for example 25.00.');
  });
});
