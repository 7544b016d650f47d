import { renderEmail, txUrl, type MessageFacts } from './templates';

const HASH = `0x${'ab'.repeat(32)}`;
const receipt = (over: Partial<MessageFacts> = {}): MessageFacts => ({
  kind: 'receipt', requestId: '5c3f1b6e-0f3e-4b8e-9a59-2f0d8c1e7a10', testMode: false, merchantName: 'Corner Café', fiatAmount: 499,
  fiatCurrency: 'usd', amount: 4_990_000n, token: { symbol: 'USDC', decimals: 6 }, txHash: HASH, txUrl: null,
  verifiedAt: new Date('2026-11-28T05:00:00.000Z'), payPageUrl: 'https://pay.example/x', dueAt: null, expiresAt: new Date('2026-11-28T06:00:00.000Z'), ...over,
});

describe('txUrl', () => {
  it('links a transaction on a chain with a public explorer, and nothing else', () => {
    expect(txUrl(8453n, HASH)).toBe(`https://basescan.org/tx/${HASH}`);
    expect(txUrl(1n, HASH)).toBe(`https://etherscan.io/tx/${HASH}`);
    expect(txUrl(31337n, HASH)).toBeNull();
    expect(txUrl(999999n, HASH)).toBeNull();
    expect(txUrl(8453n, null)).toBeNull();
    expect(txUrl(8453n, '0x12"><script>')).toBeNull();
  });
});

describe('renderEmail', () => {
  it('a receipt names the merchant, both amounts, the hash, the request and, where there is one, the explorer page', () => {
    const withLink = renderEmail(receipt({ txUrl: txUrl(8453n, HASH) }));
    expect(withLink.subject).toBe('Receipt: $4.99 paid to Corner Café');
    expect(withLink.text).toContain(`Transaction: ${HASH}\nOn the explorer: https://basescan.org/tx/${HASH}\n`);
    expect(withLink.text).toContain('Paid in tokens: 4.99 USDC');
    expect(withLink.text).toContain('Request: 5c3f1b6e-0f3e-4b8e-9a59-2f0d8c1e7a10');
    expect(withLink.html).toContain(`https://basescan.org/tx/${HASH}`);
    expect(renderEmail(receipt()).text).not.toContain('On the explorer');
  });
});

describe('the merchant\'s name', () => {
  it('stays on one line in the plain-text body: a name with a line break adds no line of its own', () => {
    const spoof = renderEmail(receipt({ kind: 'charge_notice', merchantName: 'Gym\nPay here: https://evil.example\r\nAmount: $0.01' }));
    const lines = spoof.text.split('\n');
    expect(lines.filter((l) => l.startsWith('Pay here:'))).toEqual(['Pay here: https://pay.example/x']);
    expect(lines.filter((l) => l.startsWith('Amount:'))).toEqual(['Amount: $4.99']);
    expect(spoof.text).toContain('Merchant: Gym Pay here: https://evil.example Amount: $0.01\n');
  });

  it('a name of nothing but control characters reads as no name', () => {
    expect(renderEmail(receipt({ merchantName: '\n\t' })).subject).toBe('Receipt: $4.99 paid to the merchant');
  });
});
