import { Wallet } from 'ethers';
import type { ChainReaderFactory } from '../../src/modules/chain/asset-registry';
import type { ChainReader, TransferQuery } from '../../src/modules/chain/chain-reader';
import { EthersChainReader } from '../../src/modules/chain/ethers-chain-reader';
import { DEV_KEYS, mine, rpc, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { startTwoChains } from '../support/two-chains';
import { waitFor } from '../support/wait';

/**
 * The node behind the test mode's RPC URL switches chain in the middle of a scan, after the scan asked its chain
 * id (then asked after the head, before the log reads): the scan read the range on the other chain and moved its
 * cursor over the configured chain's blocks, so a payment there that nobody submitted a hash for was never
 * found, and a transfer of the other chain to the merchant was kept as this chain's (held for the request).
 * Two real nodes, 31337 (configured) and 31338, the token at the same address on both; the reader flips from
 * one to the other right after the chain id call of the scan whose head holds the payment.
 */
const PAYER = DEV_KEYS[1];
let a: LocalNode;
let b: LocalNode;
let token: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

const inScan = () => /ChainScanService\.scanToken/.test(new Error().stack ?? '');

/**
 * Reads A, or B once flipped: flips in the scan whose head reached `flip.at`, right after its head (`tip`) or
 * right after its first chain id call (`chainId`).
 */
class SwitchingReader implements ChainReader {
  onB = false;
  flip: { after: 'tip' | 'chainId'; at: number } | null = null;
  flips = 0;
  private scanTip = -1;
  constructor(private readonly onA: ChainReader, private readonly other: ChainReader) {}
  private get r(): ChainReader {
    return this.onB ? this.other : this.onA;
  }
  private flipAfter(call: 'tip' | 'chainId'): void {
    if (this.flip?.after !== call || this.onB || !inScan() || this.scanTip < this.flip.at) return;
    this.onB = true;
    this.flip = null;
    this.flips++;
  }
  async chainId(): Promise<bigint> {
    const id = await this.r.chainId();
    this.flipAfter('chainId');
    return id;
  }
  async tip(): Promise<number> {
    const t = await this.r.tip();
    if (inScan()) this.scanTip = t;
    this.flipAfter('tip');
    return t;
  }
  block(n: number | string) { return this.r.block(n); }
  finalizedBlock() { return this.r.finalizedBlock(); }
  receipt(h: string) { return this.r.receipt(h); }
  transaction(h: string) { return this.r.transaction(h); }
  transfers(q: TransferQuery) { return this.r.transfers(q); }
  tokenInfo(t: string) { return this.r.tokenInfo(t); }
  isValidSignature(s: string, d: string, sig: string) { return this.r.isValidSignature(s, d, sig); }
}
let reader: SwitchingReader;

const cursor = async (): Promise<number> => {
  const [row] = await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE chain_id = 31337 AND token_address = $1`, [token.toLowerCase()]);
  return row ? Number(row.last_block) : -1;
};
const stored = async (id: string) => (await sql(`SELECT proof_status, tx_hash FROM payment_requests WHERE id = $1`, [id]))[0];
const tipOf = async (node: LocalNode) => Number(await rpc<string>(node.url, 'eth_blockNumber'));

beforeAll(async () => {
  ({ a, b, token } = await startTwoChains(PAYER));
  const readerFactory: ChainReaderFactory = () => (reader = new SwitchingReader(new EthersChainReader(a.url, 2000), new EthersChainReader(b.url, 2000)));
  svc = await startService({
    worker: true,
    chain: { readerFactory },
    env: {
      CHAIN_TEST_RPC_URL: a.url, CHAIN_TEST_TOKEN_ADDRESS: token, CHAIN_TEST_CONFIRMATIONS: '1', CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '100', CHAIN_SCAN_INTERVAL_MS: '300', CHAIN_RPC_TIMEOUT_MS: '2000', RATE_LIMIT_SCALE: '100',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 90000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await a?.stop();
  await b?.stop();
});

async function payOnBothDuringASwitch(after: 'tip' | 'chainId', fiat: number): Promise<void> {
  reader.onB = false;
  reader.flip = null;
  await waitFor(async () => (await call(svc.adminUrl, 'GET', '/health/ready')).status === 200, 30000);
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: fiat } });
  expect(r.status).toBe(201);
  const amount = BigInt(r.body.amount);
  const start = await tipOf(a);
  await waitFor(async () => (await cursor()) >= start, 20000);

  // The same transfer in the same block on both chains: a scan reading B after the switch finds B's.
  await mine(b.url, start - (await tipOf(b)));
  const flips = reader.flips;
  reader.flip = { after, at: start + 1 };
  const onB = await transferToken(b.url, token, PAYER, merchant.wallet.address, amount);
  const onA = await transferToken(a.url, token, PAYER, merchant.wallet.address, amount);
  expect([onA.blockNumber, onB.blockNumber]).toEqual([start + 1, start + 1]);
  await waitFor(async () => reader.flips === flips + 1, 20000);
  // The scans on B end with the mode switched off (readiness says so): whatever they moved or kept is in place.
  await waitFor(async () => (await call(svc.adminUrl, 'GET', '/health/ready')).status !== 200, 20000);
  // Verified from A before the switch, or not moved past A's payment.
  expect((await stored(r.body.request_id)).proof_status === 'verified' || (await cursor()) < onA.blockNumber).toBe(true);
  expect(await sql(`SELECT reason FROM unmatched_transfers WHERE tx_hash = $1`, [onB.txHash.toLowerCase()])).toEqual([]);
  reader.onB = false;
  await mine(a.url, 1);
  const verified = await waitFor(async () => {
    const s = await stored(r.body.request_id);
    return s.proof_status === 'verified' ? s : null;
  }, 30000);
  expect(verified.tx_hash).toBe(onA.txHash);
}

it('a switch after the scan asked the chain id moves no cursor over a payment on the configured chain', async () => {
  await payOnBothDuringASwitch('chainId', 333);
}, 90000);

it("a switch between the scan's head and its log reads keeps nothing of the other chain's transfers", async () => {
  await payOnBothDuringASwitch('tip', 334);
}, 90000);
