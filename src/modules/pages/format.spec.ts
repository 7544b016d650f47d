import { formatFiat, formatTokenUnits } from './format';

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
