import { createHash } from 'node:crypto';
import { Wallet } from 'ethers';
import type { ChainConfig, Mode } from '../../src/config/config';
import type { ChainReaderFactory } from '../../src/modules/chain/asset-registry';
import {
  TRANSFER_TOPIC, decodeTransferLog, type ChainBlock, type ChainReader, type ChainReceipt, type ChainTransaction, type ChainTransfer,
  type TransferQuery,
} from '../../src/modules/chain/chain-reader';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { waitFor } from '../support/wait';

/**
 * Issue 6 item 8 (docs/extending.md): the chain reader replaced through dependency injection. The service
 * runs with `chain: { readerFactory }` (ChainModule.forRoot's options) and no EVM node at all: the reader
 * below is an in-memory chain with its own chain id and an 18-decimals token. Prices, asset ids, health and
 * verification all go through it.
 */

const CHAIN_ID = 777777n;
const TOKEN = '0x00000000000000000000000000000000000e7e47';
const DECIMALS = 18;
const SYMBOL = 'XUSD';

const hash = (s: string) => `0x${createHash('sha256').update(s).digest('hex')}`;
const word = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`;
const topicOf = (address: string) => `0x${address.slice(2).toLowerCase().padStart(64, '0')}`;

/** A ChainReader over an in-memory chain: one block per transfer, timestamps from the wall clock. */
class InMemoryChainReader implements ChainReader {
  private readonly blocks: ChainBlock[] = [{ number: 0, hash: hash('block-0'), timestamp: Math.floor(Date.now() / 1000) }];
  private readonly receipts = new Map<string, ChainReceipt>();
  readonly calls: string[] = [];

  constructor(readonly mode: Mode, private readonly token: string) {}

  /** This chain has no contract wallets: only plain accounts sign, and those are checked without the chain. */
  async isValidSignature(): Promise<boolean> {
    return false;
  }

  /** Mines a block holding one ERC-20 transfer of the token and returns its transaction hash. */
  transfer(from: string, to: string, value: bigint): string {
    const number = this.blocks.length;
    const block: ChainBlock = { number, hash: hash(`block-${number}`), timestamp: Math.floor(Date.now() / 1000) };
    this.blocks.push(block);
    const txHash = hash(`tx-${number}-${to}-${value}`);
    this.receipts.set(txHash, {
      txHash,
      status: 1,
      blockNumber: number,
      blockHash: block.hash,
      from: from.toLowerCase(),
      to: this.token,
      logs: [{
        address: this.token,
        topics: [TRANSFER_TOPIC, topicOf(from), topicOf(to)],
        data: word(value),
        logIndex: 0,
        blockNumber: number,
        blockHash: block.hash,
        transactionHash: txHash,
      }],
    });
    return txHash;
  }

  async chainId(): Promise<bigint> {
    this.calls.push('chainId');
    return CHAIN_ID;
  }

  async tokenInfo(token: string): Promise<{ decimals: number; symbol: string }> {
    this.calls.push('tokenInfo');
    if (token !== this.token) throw new Error(`unknown token ${token}`);
    return { decimals: DECIMALS, symbol: SYMBOL };
  }

  async tip(): Promise<number> {
    this.calls.push('tip');
    return this.blocks.length - 1;
  }

  async block(numberOrHash: number | string): Promise<ChainBlock | null> {
    this.calls.push('block');
    return this.blocks.find((b) => b.number === numberOrHash || b.hash === numberOrHash) ?? null;
  }

  /** Nothing reorgs in memory: every block is final. */
  async finalizedBlock(): Promise<ChainBlock | null> {
    this.calls.push('finalizedBlock');
    return this.blocks[this.blocks.length - 1];
  }

  async receipt(txHash: string): Promise<ChainReceipt | null> {
    this.calls.push('receipt');
    return this.receipts.get(txHash) ?? null;
  }

  /** Every transaction of this chain is mined at once: known means mined. */
  async transaction(txHash: string): Promise<ChainTransaction | null> {
    this.calls.push('transaction');
    const r = this.receipts.get(txHash);
    return r ? { hash: txHash, blockNumber: r.blockNumber } : null;
  }

  async transfers(q: TransferQuery): Promise<ChainTransfer[]> {
    this.calls.push('transfers');
    return [...this.receipts.values()]
      .filter((r) => ('blockHash' in q ? r.blockHash === q.blockHash : r.blockNumber >= q.fromBlock && r.blockNumber <= q.toBlock))
      .flatMap((r) => r.logs.map(decodeTransferLog))
      .filter((t): t is ChainTransfer => t !== null && t.token === q.token && q.to.includes(t.to));
  }
}

const readers = new Map<Mode, InMemoryChainReader>();
const readerFactory: ChainReaderFactory = (mode: Mode, chain: ChainConfig) => {
  const reader = new InMemoryChainReader(mode, chain.tokenAddress);
  readers.set(mode, reader);
  return reader;
};

let svc: TestService;

beforeAll(async () => {
  svc = await startService({
    worker: true,
    chain: { readerFactory },
    env: {
      // Never dialled: the reader above answers for the test mode.
      CHAIN_TEST_RPC_URL: 'http://127.0.0.1:9/unused',
      CHAIN_TEST_CHAIN_ID: CHAIN_ID.toString(),
      CHAIN_TEST_TOKEN_ADDRESS: TOKEN,
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
    },
  });
}, 60000);

afterAll(async () => {
  await svc?.close();
});

it('the service reads its chain through the provided reader', async () => {
  const reader = readers.get('test')!;
  expect(reader).toBeInstanceOf(InMemoryChainReader);
  expect(reader.calls).toEqual(expect.arrayContaining(['chainId', 'tokenInfo']));

  const ready = await call(svc.adminUrl, 'GET', '/health/ready');
  expect(ready.status).toBe(200);
  expect(ready.body.details.chain_test).toMatchObject({ status: 'up', chain_id: CHAIN_ID.toString() });
  expect(ready.body.details.chain_live).toBeUndefined();
});

it('prices requests with its token decimals and names its chain in asset_id', async () => {
  const partner = await createPartner(svc);
  const merchant = await createOnboardedMerchant(svc, partner.testKey);
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 1234 });
  // 12.34 usd at 1 usd per token, 18 decimals.
  expect(r.amount).toBe('12340000000000000000');
  expect(r.asset_id).toBe(`eip155:${CHAIN_ID}/erc20:${TOKEN}`);

  const pay = await call(svc.publicUrl, 'GET', `/pay/api/${r.request_id}`);
  expect(pay.body).toMatchObject({ token_symbol: SYMBOL, token_decimals: DECIMALS });
  expect(String(pay.body.chain_id)).toBe(CHAIN_ID.toString());

  // A transfer on the in-memory chain verifies the request like one on a real chain.
  const payer = Wallet.createRandom().address;
  const txHash = readers.get('test')!.transfer(payer, merchant.wallet.address, BigInt(r.amount));
  const proof = await call(svc.publicUrl, 'POST', `/pay/api/${r.request_id}/proof`, { body: { tx_hash: txHash } });
  expect(proof.status).toBe(200);
  const verified = (await waitFor(async () => {
    const got = await call(svc.publicUrl, 'GET', `/api/v1/requests/${r.request_id}`, { key: partner.testKey });
    return got.body.proof_status === 'verified' ? got.body : null;
  }, 20000, 100))!;
  expect(verified.tx_hash).toBe(txHash);
  expect(readers.get('test')!.calls).toContain('receipt');
});

it("the pay page names a request's own token, also once its mode is configured with another", async () => {
  const partner = await createPartner(svc);
  const merchant = await createOnboardedMerchant(svc, partner.testKey);
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 1234 });
  // The operator moves test mode to another chain and token (the test env's: TUSD, 6 decimals). The open
  // request is still priced in XUSD, 18 decimals, and its payer must be told so: 12.34 XUSD, not
  // 12340000000000 TUSD.
  const moved = await startService();
  try {
    const pay = await call(moved.publicUrl, 'GET', `/pay/api/${r.request_id}`);
    expect(pay.status).toBe(200);
    expect(pay.body).toMatchObject({ asset_id: r.asset_id, amount: '12340000000000000000', token_symbol: SYMBOL, token_decimals: DECIMALS });
    const page = await fetch(`${moved.publicUrl}/pay/${r.request_id}`).then((x) => x.text());
    expect(page).toContain(`12.34 ${SYMBOL}`);
  } finally {
    await moved.close();
  }
});
