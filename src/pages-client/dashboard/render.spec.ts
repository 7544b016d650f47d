import { tokenAmount } from './render';

describe('tokenAmount (the request detail\'s "Amount in tokens")', () => {
  it.each([
    ['12340000', { symbol: 'USDC', decimals: 6 }, '12.34 USDC'],
    ['12340001', { symbol: 'USDC', decimals: 6 }, '12.340001 USDC'],
    ['1', { symbol: 'USDC', decimals: 6 }, '0.000001 USDC'],
    ['13413044', { symbol: 'TUSD', decimals: 6 }, '13.413044 TUSD'],
    ['1234500000000000000000', { symbol: 'DAI', decimals: 18 }, '1,234.5 DAI'],
    // Past 2^53: a float would already have lost the last digits.
    ['123456789012345678901234567891', { symbol: 'DAI', decimals: 18 }, '123,456,789,012.345678901234567891 DAI'],
    ['42', { symbol: 'WHOLE', decimals: 0 }, '42 WHOLE'],
    ['12340000', null, '12340000 base units'],
  ] as const)('%s with %j → %s', (amount, token, shown) => {
    expect(tokenAmount({ amount, token })).toBe(shown);
  });
});
