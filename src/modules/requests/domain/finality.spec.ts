import { TRANSFER_TOPIC, type ChainReceipt } from '../../chain/chain-reader';
import { claimStanding, deepThrough, isDeepEnough, settleDepth, type ClaimToRecheck } from './finality';

describe('the depth rule (DESIGN §3, §7)', () => {
  // A transfer in block b has N confirmations when the tip is at b + N − 1.
  it.each([
    // block, required, tip, finalized, deep enough
    [100, 1, 99, null, false],
    [100, 1, 100, null, true],
    [100, 3, 101, null, false],
    [100, 3, 102, null, true],
    [100, 3, 150, null, true],
    [100, 'finalized', 200, null, false], // no finalized block named: nothing qualifies
    [100, 'finalized', 200, 99, false],
    [100, 'finalized', 200, 100, true],
    [100, 'finalized', 100, 120, true],
  ] as const)('block %p, %p required, tip %p, finalized %p → %p', (block, required, tip, finalized, deep) => {
    expect(isDeepEnough(block, required, { tip, finalized })).toBe(deep);
  });

  it('settles at twice the confirmation depth, or at finality', () => {
    expect(settleDepth(1)).toBe(2);
    expect(settleDepth(12)).toBe(24);
    expect(settleDepth('finalized')).toBe('finalized');
    // Verified at exactly N = 2 (tip = b + 1), settled at 2N = 4 (tip = b + 3), not a block earlier.
    expect(isDeepEnough(100, 2, { tip: 101, finalized: null })).toBe(true);
    expect(isDeepEnough(100, settleDepth(2), { tip: 102, finalized: null })).toBe(false);
    expect(isDeepEnough(100, settleDepth(2), { tip: 103, finalized: null })).toBe(true);
  });

  it('gives the highest qualifying block for the chain scan', () => {
    expect(deepThrough(1, { tip: 50, finalized: null })).toBe(50);
    expect(deepThrough(3, { tip: 50, finalized: null })).toBe(48);
    expect(deepThrough('finalized', { tip: 50, finalized: 30 })).toBe(30);
    expect(deepThrough('finalized', { tip: 50, finalized: null })).toBe(-1);
  });
});

describe('whether a verified claim is still on the canonical chain', () => {
  const TOKEN = '0x' + 'aa'.repeat(20);
  const TO = '0x' + 'bb'.repeat(20);
  const FROM = '0x' + 'cc'.repeat(20);
  const topic = (a: string) => '0x' + a.slice(2).padStart(64, '0');
  // Created at T; claim window until T + 2 h. Blocks are timed inside it unless a test says otherwise.
  const T = Date.parse('2026-11-27T12:00:00Z');
  const IN_WINDOW = T / 1000 + 600;
  const claim: ClaimToRecheck = {
    txHash: '0x' + '11'.repeat(32), logIndex: 3, tokenAddress: TOKEN, recipient: TO, amount: 500n, blockNumber: 100, blockHash: '0xb100',
    createdAt: new Date(T), claimUntil: new Date(T + 2 * 3600_000),
  };
  const receipt = (over: Partial<ChainReceipt> & { value?: bigint; logIndex?: number } = {}): ChainReceipt => ({
    txHash: claim.txHash,
    status: 1,
    blockNumber: 100,
    blockHash: '0xb100',
    from: FROM,
    to: TOKEN,
    logs: [{
      address: TOKEN, topics: [TRANSFER_TOPIC, topic(FROM), topic(TO)], data: '0x' + (over.value ?? 500n).toString(16).padStart(64, '0'),
      logIndex: over.logIndex ?? 3, blockNumber: over.blockNumber ?? 100, blockHash: over.blockHash ?? '0xb100', transactionHash: claim.txHash,
    }],
    ...over,
  });

  it('is in place while the canonical block at its height keeps its hash (no receipt needed)', () => {
    expect(claimStanding(claim, { blockAtClaim: { hash: '0xb100', timestamp: IN_WINDOW }, receipt: null, receiptBlock: null })).toEqual({ kind: 'in_place', blockNumber: 100, blockHash: '0xb100', inWindow: true });
  });

  it('vanished: block replaced and no receipt', () => {
    expect(claimStanding(claim, { blockAtClaim: { hash: '0xother', timestamp: IN_WINDOW }, receipt: null, receiptBlock: null })).toEqual({ kind: 'vanished', reason: 'receipt_missing' });
    expect(claimStanding(claim, { blockAtClaim: null, receipt: null, receiptBlock: null })).toEqual({ kind: 'vanished', reason: 'receipt_missing' });
  });

  it('vanished: a receipt the node still serves from the replaced block', () => {
    expect(claimStanding(claim, { blockAtClaim: { hash: '0xother', timestamp: IN_WINDOW }, receipt: receipt(), receiptBlock: { hash: '0xother', timestamp: IN_WINDOW } })).toEqual({ kind: 'vanished', reason: 'receipt_not_canonical' });
  });

  it('vanished: re-included but reverted, or without the transfer', () => {
    const seen = (r: ChainReceipt) => ({ blockAtClaim: { hash: '0xother', timestamp: IN_WINDOW }, receipt: r, receiptBlock: { hash: r.blockHash, timestamp: IN_WINDOW } });
    expect(claimStanding(claim, seen(receipt({ blockNumber: 101, blockHash: '0xb101', status: 0 })))).toEqual({ kind: 'vanished', reason: 'transaction_failed' });
    expect(claimStanding(claim, seen(receipt({ blockNumber: 101, blockHash: '0xb101', value: 499n })))).toEqual({ kind: 'vanished', reason: 'transfer_missing' });
    // Re-executed into a transfer from the wallet to itself: no money moved, so the claim is not moved onto it
    // (the pay rule refuses a self-transfer; a verification hunt's doubt).
    const self = receipt({ blockNumber: 101, blockHash: '0xb101' });
    self.logs[0].topics[1] = topic(TO);
    expect(claimStanding(claim, seen(self))).toEqual({ kind: 'vanished', reason: 'transfer_missing' });
  });

  it('moved: the same transfer re-included in another canonical block, log index following it', () => {
    const r = receipt({ blockNumber: 102, blockHash: '0xb102', logIndex: 0 });
    expect(claimStanding(claim, { blockAtClaim: { hash: '0xother', timestamp: IN_WINDOW }, receipt: r, receiptBlock: { hash: '0xb102', timestamp: IN_WINDOW } })).toEqual({ kind: 'moved', blockNumber: 102, blockHash: '0xb102', logIndex: 0, inWindow: true });
  });

  it('says whether the block it is in lies in the pay window: up to claim_until, from 60 s before creation', () => {
    const r = receipt({ blockNumber: 102, blockHash: '0xb102', logIndex: 0 });
    const moved = (timestamp: number) => claimStanding(claim, { blockAtClaim: { hash: '0xother', timestamp }, receipt: r, receiptBlock: { hash: '0xb102', timestamp } });
    const until = claim.claimUntil.getTime() / 1000;
    const where = { kind: 'moved', blockNumber: 102, blockHash: '0xb102', logIndex: 0 };
    expect(moved(until)).toEqual({ ...where, inWindow: true });
    expect(moved(until + 1)).toEqual({ ...where, inWindow: false });
    expect(moved(T / 1000 - 60)).toEqual({ ...where, inWindow: true });
    expect(moved(T / 1000 - 61)).toEqual({ ...where, inWindow: false });
    // In place too (a claim stored where it moved outside the window is lost, not settled, when deep enough).
    expect(claimStanding(claim, { blockAtClaim: { hash: '0xb100', timestamp: until + 1 }, receipt: null, receiptBlock: null }))
      .toEqual({ kind: 'in_place', blockNumber: 100, blockHash: '0xb100', inWindow: false });
  });

  it('a claim recorded before blocks were kept is located through its receipt', () => {
    const legacy = { ...claim, blockNumber: null, blockHash: null };
    expect(claimStanding(legacy, { blockAtClaim: null, receipt: receipt(), receiptBlock: { hash: '0xb100', timestamp: IN_WINDOW } })).toEqual({ kind: 'moved', blockNumber: 100, blockHash: '0xb100', logIndex: 3, inWindow: true });
  });
});
