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
    const asset_id = 'eip155:31337/erc20:0x5fbdb2315678afecb367f032d93f642f64180aa3';
    const assets = token ? [{ asset_id: 'eip155:1/erc20:0x' + '11'.repeat(20), symbol: 'OTHER', decimals: 2 }, { asset_id, ...token }] : [];
    expect(tokenAmount({ amount, asset_id }, assets)).toBe(shown);
  });

  it('matches the asset id whatever the case of its address, and shows base units for an asset the list lacks', () => {
    const assets = [{ asset_id: 'eip155:1/erc20:0x' + 'ab'.repeat(20), symbol: 'USDC', decimals: 6 }];
    expect(tokenAmount({ amount: '12340000', asset_id: 'eip155:1/erc20:0x' + 'AB'.repeat(20) }, assets)).toBe('12.34 USDC');
    expect(tokenAmount({ amount: '12340000', asset_id: 'eip155:2/erc20:0x' + 'ab'.repeat(20) }, assets)).toBe('12340000 base units');
  });
});
