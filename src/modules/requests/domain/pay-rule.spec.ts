import { TRANSFER_TOPIC, type ChainLog, type ChainReceipt } from '../../chain/chain-reader';
import { confirmations, judgeTransaction, type PayTarget } from './pay-rule';

const TOKEN = '0x' + 'aa'.repeat(20);
const OTHER_TOKEN = '0x' + 'bb'.repeat(20);
const WALLET = '0x' + 'cc'.repeat(20);
const PAYER = '0x' + 'dd'.repeat(20);
const created = new Date('2026-11-22T12:00:00.000Z');
const target: PayTarget = {
  chainId: 31337n,
  tokenAddress: TOKEN,
  recipient: WALLET,
  amount: 1_000_000n,
  createdAt: created,
  claimUntil: new Date(created.getTime() + 2 * 3600_000),
};

const topic = (addr: string) => '0x' + addr.slice(2).padStart(64, '0');
function transferLog(opts: { token?: string; to?: string; value?: bigint; index?: number; topics?: string[] } = {}): ChainLog {
  return {
    address: opts.token ?? TOKEN,
    topics: opts.topics ?? [TRANSFER_TOPIC, topic(PAYER), topic(opts.to ?? WALLET)],
    data: '0x' + (opts.value ?? 1_000_000n).toString(16).padStart(64, '0'),
    logIndex: opts.index ?? 0,
    blockNumber: 10,
    blockHash: '0x' + '11'.repeat(32),
    transactionHash: '0x' + '22'.repeat(32),
  };
}
function receipt(logs: ChainLog[], status = 1): ChainReceipt {
  return { txHash: '0x' + '22'.repeat(32), status, blockNumber: 10, blockHash: '0x' + '11'.repeat(32), from: PAYER, to: TOKEN, logs };
}
const inWindow = created.getTime() / 1000 + 30;

describe('judgeTransaction', () => {
  it.each([
    ['exact payment', [transferLog()], 1, inWindow, null],
    ['reverted transaction', [transferLog()], 0, inWindow, 'transaction_failed'],
    ['another token with the same event', [transferLog({ token: OTHER_TOKEN })], 1, inWindow, 'wrong_token'],
    ['another recipient', [transferLog({ to: PAYER })], 1, inWindow, 'no_transfer_to_recipient'],
    // The wallet to itself (the merchant, or a spender it approved): no money arrives.
    ['a self-transfer of the wallet', [transferLog({ topics: [TRANSFER_TOPIC, topic(WALLET), topic(WALLET)] })], 1, inWindow, 'no_transfer_to_recipient'],
    ['a self-transfer beside an exact payment', [transferLog({ topics: [TRANSFER_TOPIC, topic(WALLET), topic(WALLET)] }), transferLog({ index: 1 })], 1, inWindow, null],
    ['value − 1', [transferLog({ value: 999_999n })], 1, inWindow, 'underpaid'],
    ['value + 1', [transferLog({ value: 1_000_001n })], 1, inWindow, 'overpaid'],
    ['no logs', [], 1, inWindow, 'no_transfer_to_recipient'],
    ['an ERC-721 style Transfer (4 topics)', [transferLog({ topics: [TRANSFER_TOPIC, topic(PAYER), topic(WALLET), topic(PAYER)] })], 1, inWindow, 'no_transfer_to_recipient'],
    ['mined 61 s before the request', [transferLog()], 1, created.getTime() / 1000 - 61, 'before_request'],
    ['mined 59 s before the request (clock tolerance)', [transferLog()], 1, created.getTime() / 1000 - 59, null],
    ['mined at the end of the grace window', [transferLog()], 1, target.claimUntil.getTime() / 1000, null],
    ['mined after expiry plus the grace', [transferLog()], 1, target.claimUntil.getTime() / 1000 + 1, 'after_window'],
  ])('%s', (_name, logs, status, blockTime, reason) => {
    const verdict = judgeTransaction(target, { chainId: 31337n, receipt: receipt(logs, status), blockTime });
    if (reason === null) expect(verdict.pays).toBe(true);
    else expect(verdict).toEqual({ pays: false, reason });
  });

  it('refuses a receipt from another chain', () => {
    expect(judgeTransaction(target, { chainId: 1n, receipt: receipt([transferLog()]), blockTime: inWindow })).toEqual({ pays: false, reason: 'wrong_chain' });
  });

  it('returns every qualifying log in order, so a claimed one can be skipped', () => {
    const verdict = judgeTransaction(target, {
      chainId: 31337n,
      receipt: receipt([transferLog({ index: 3 }), transferLog({ token: OTHER_TOKEN, index: 4 }), transferLog({ index: 5 })]),
      blockTime: inWindow,
    });
    expect(verdict.pays && verdict.transfers.map((t) => t.logIndex)).toEqual([3, 5]);
  });

  it('pays when an exact transfer sits beside a wrong one', () => {
    const verdict = judgeTransaction(target, {
      chainId: 31337n,
      receipt: receipt([transferLog({ value: 5n, index: 0 }), transferLog({ index: 1 })]),
      blockTime: inWindow,
    });
    expect(verdict.pays).toBe(true);
  });
});

describe('confirmations', () => {
  it.each([
    [10, 9, 0],
    [10, 10, 1],
    [10, 12, 3],
  ])('block %i at tip %i has %i', (block, tip, n) => expect(confirmations(block, tip)).toBe(n));
});
