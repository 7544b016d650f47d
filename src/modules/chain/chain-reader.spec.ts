import { type ChainLog, TRANSFER_TOPIC, decodeTransferLog } from './chain-reader';

const FROM = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const TO = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';
const topic = (address: string) => `0x${address.slice(2).padStart(64, '0')}`;
const word = (value: bigint) => `0x${value.toString(16).padStart(64, '0')}`;
const APPROVAL_TOPIC = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';
const upper = (hex: string) => `0x${hex.slice(2).toUpperCase()}`;

function log(overrides: Partial<ChainLog> = {}): ChainLog {
  return {
    address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    topics: [TRANSFER_TOPIC, topic(FROM), topic(TO)],
    data: word(1_500_000n),
    logIndex: 2,
    blockNumber: 7,
    blockHash: `0x${'AB'.repeat(32)}`,
    transactionHash: `0x${'CD'.repeat(32)}`,
    ...overrides,
  };
}

describe('decodeTransferLog', () => {
  it('decodes a standard ERC-20 Transfer (3 topics, 32-byte data), lowercasing addresses and hashes', () => {
    expect(decodeTransferLog(log())).toEqual({
      txHash: `0x${'cd'.repeat(32)}`,
      logIndex: 2,
      blockNumber: 7,
      blockHash: `0x${'ab'.repeat(32)}`,
      token: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
      from: FROM,
      to: TO,
      value: 1_500_000n,
    });
  });

  it('accepts upper-case hex in topics and data, and values beyond 2^53', () => {
    const value = 2n ** 255n + 12345n;
    const decoded = decodeTransferLog(
      log({ topics: [upper(TRANSFER_TOPIC), upper(topic(FROM)), topic(TO)], data: upper(word(value)) }),
    );
    expect(decoded?.value).toBe(value);
    expect(decoded?.from).toBe(FROM);
  });

  it('decodes a mint (from the zero address) and a zero value', () => {
    const zero = `0x${'0'.repeat(40)}`;
    const decoded = decodeTransferLog(log({ topics: [TRANSFER_TOPIC, topic(zero), topic(TO)], data: word(0n) }));
    expect(decoded).toMatchObject({ from: zero, value: 0n });
  });

  it.each<[string, Partial<ChainLog>]>([
    [
      '4 topics (ERC-721 Transfer with the token id indexed)',
      { topics: [TRANSFER_TOPIC, topic(FROM), topic(TO), word(1n)], data: '0x' },
    ],
    ['2 topics (from and to not indexed)', { topics: [TRANSFER_TOPIC, topic(FROM)] }],
    ['no topics (anonymous event)', { topics: [] }],
    ['64-byte data', { data: `${word(1n)}${word(2n).slice(2)}` }],
    ['empty data', { data: '0x' }],
    ['short data', { data: '0x01' }],
    ['data that is not hex', { data: `0x${'zz'.repeat(32)}` }],
    ['wrong topic0 (Approval)', { topics: [APPROVAL_TOPIC, topic(FROM), topic(TO)] }],
    ['a topic that is not a padded address', { topics: [TRANSFER_TOPIC, `0x01${topic(FROM).slice(4)}`, topic(TO)] }],
    ['a topic of the wrong length', { topics: [TRANSFER_TOPIC, topic(FROM), TO] }],
  ])('rejects %s', (_why, overrides) => {
    expect(decodeTransferLog(log(overrides))).toBeNull();
  });
});
