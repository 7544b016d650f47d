import { Interface, JsonRpcProvider, keccak256, parseUnits, Wallet } from 'ethers';
import {
  broadcast, deployContract, deployToken, DEV_KEYS, findFreePort, mine, mint, revert, sendCall, setAutomine, snapshot,
  startLocalNode, type LocalNode,
} from '../../scripts/chain/local-node';
import { FinalityService } from '../../src/modules/requests/application/finality.service';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { waitFor } from '../support/wait';

/**
 * The chain scan meeting a verified request's transaction in another block than its claim's: a reorg deeper
 * than N re-included it, and the finality job has not re-read the claim yet (the scan reads at N, finality at
 * 2N; here finality runs only when the test calls it). Which of the transaction's transfers is the claim now
 * is finality's to say: until it has, the scan keeps them undecided, then forgets the claim and keeps any
 * other transfer as unmatched (a helper's hunt: a batch paying one request twice lost its second transfer's
 * row, both being taken for the claim). CONFIRMATIONS = 3.
 */
const CONFIRMATIONS = 3;
const PAYER = DEV_KEYS[1];
let node: LocalNode;
let token: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };
let provider: JsonRpcProvider;

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  await mint(node.url, token, new Wallet(PAYER).address, 10n ** 15n);
  provider = new JsonRpcProvider(node.url, undefined, { cacheTimeout: -1 });
  svc = await startService({
    worker: true,
    env: {
      CHAIN_TEST_RPC_URL: node.url,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS),
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      EXPIRY_SWEEP_INTERVAL_MS: '300',
      FINALITY_CHECK_INTERVAL_MS: '3600000',
      RATE_LIMIT_SCALE: '100',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  provider?.destroy();
  await closeSql();
  await svc?.close();
  await node?.stop();
});

let fiat = 500;
async function newRequest(): Promise<{ id: string; amount: bigint }> {
  const r = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: (fiat += 13) });
  return { id: r.request_id, amount: BigInt(r.amount) };
}
const get = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey })).body;
const kept = (txHash: string) =>
  sql<{ log_index: number; reason: string; pending_request_id: string | null }>(
    `SELECT log_index, reason, pending_request_id FROM unmatched_transfers WHERE tx_hash = $1 ORDER BY log_index`, [txHash]);
const cursor = async () => Number((await sql<{ last_block: string }>(
  `SELECT last_block FROM chain_cursors WHERE token_address = $1`, [token.toLowerCase()]))[0]?.last_block ?? -1);
const claimed = async (id: string) => (await sql<{ claimed_log_index: number; claimed_block_number: string }>(
  `SELECT claimed_log_index, claimed_block_number FROM payment_requests WHERE id = $1`, [id]))[0];

/** A signed transaction not yet sent, so the same one can be mined again after a revert. */
async function signed(key: string, to: string, data: string): Promise<string> {
  const w = new Wallet(key, provider);
  const nonce = await provider.getTransactionCount(w.address, 'pending');
  return w.signTransaction({
    to, data, nonce, gasLimit: 400_000n, chainId: 31337n, type: 2,
    maxFeePerGas: parseUnits('50', 'gwei'), maxPriorityFeePerGas: parseUnits('1', 'gwei'),
  });
}

/** Mines `raw` in one block behind a mint, whose log comes first: the raw's logs move up by one. */
async function reincludeBehindAnotherLog(raw: string): Promise<number> {
  const mintData = new Interface(['function mint(address,uint256)']).encodeFunctionData('mint', [Wallet.createRandom().address, 5n]);
  const first = await signed(DEV_KEYS[0], token, mintData);
  await setAutomine(node.url, false);
  try {
    await broadcast(node.url, first);
    const hash = await broadcast(node.url, raw);
    await mine(node.url, 1);
    return (await provider.getTransactionReceipt(hash))!.blockNumber;
  } finally {
    await setAutomine(node.url, true);
  }
}

/**
 * The scan's cursor once it has passed the block that holds `raw`'s transaction now: the pass that read it
 * has committed, so none is still writing what it saw there while the chain is reorganised.
 */
async function readPast(raw: string): Promise<number> {
  const mined = (await provider.getTransactionReceipt(keccak256(raw)))!.blockNumber;
  return (await waitFor(async () => {
    const read = await cursor();
    return read >= mined ? read : null;
  }, 15000))!;
}

/** Reverts to `snap`, then mines until the re-included transaction lands above the scan's cursor (read again). */
async function reorgAbove(snap: string, raw: string): Promise<number> {
  const read = await readPast(raw);
  await revert(node.url, snap);
  const height = await provider.getBlockNumber();
  if (read > height) await mine(node.url, read - height);
  const at = await reincludeBehindAnotherLog(raw);
  expect(at).toBeGreaterThan(read);
  await mine(node.url, CONFIRMATIONS);
  await waitFor(async () => (await cursor()) >= at, 15000);
  return at;
}

/** Finality moves the claim into the new block; the next blocks let the scan's retries decide. */
async function finalityMovesTheClaim(id: string, at: number): Promise<void> {
  await svc.app.get(FinalityService).settle('test');
  expect(Number((await claimed(id)).claimed_block_number)).toBe(at);
  await mine(node.url, 1);
}

describe('a verified request\'s transaction met again in another block', () => {
  /** A request paid by one plain transfer, verified; the snapshot from before it was mined, to mine it again. */
  async function paidByOneTransfer() {
    const r = await newRequest();
    const transfer = new Interface(['function transfer(address,uint256)']).encodeFunctionData('transfer', [merchant.wallet.address, r.amount]);
    const raw = await signed(PAYER, token, transfer);
    const snap = await snapshot(node.url);
    const hash = await broadcast(node.url, raw);
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => ((await get(r.id)).proof_status === 'verified' ? true : null));
    return { r, raw, snap, hash };
  }

  it('the claimed transfer itself: held until finality moves the claim, then forgotten', async () => {
    const { r, raw, snap, hash } = await paidByOneTransfer();

    const at = await reorgAbove(snap, raw);
    expect(await kept(hash)).toEqual([{ log_index: 1, reason: 'unconfirmed_claim_moving', pending_request_id: r.id }]);
    await finalityMovesTheClaim(r.id, at);
    await waitFor(async () => ((await kept(hash)).length === 0 ? true : null));
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 1 });
    expect((await get(r.id)).proof_status).toBe('verified');
  }, 60000);

  /** A signed batch of two transfers to the merchant, of these values (one transaction). */
  async function batchOf(values: [bigint, bigint]): Promise<string> {
    const batch = await deployContract(node.url, 'TestBatchTransfer.sol', 'TestBatchTransfer');
    await sendCall(node.url, token, new Interface(['function approve(address,uint256)']).encodeFunctionData('approve', [batch, 2n ** 255n]), PAYER);
    const data = new Interface(['function transferEach(address token, address[] to, uint256[] value)'])
      .encodeFunctionData('transferEach', [token, [merchant.wallet.address, merchant.wallet.address], values]);
    return signed(PAYER, batch, data);
  }
  const payTwiceInOneBatch = (r: { amount: bigint }) => batchOf([r.amount, r.amount]);

  /** Mines `raw` alone in a block above the scan's cursor, after a revert to `snap`. */
  async function reincludeAlone(snap: string, raw: string, hash: string): Promise<number> {
    const read = await readPast(raw);
    await revert(node.url, snap);
    const height = await provider.getBlockNumber();
    if (read > height) await mine(node.url, read - height);
    await broadcast(node.url, raw);
    const at = (await provider.getTransactionReceipt(hash))!.blockNumber;
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => (await cursor()) >= at, 15000);
    return at;
  }

  it('a batch paying the request twice: the second transfer stays kept as unmatched after the reorg', async () => {
    const r = await newRequest();
    const raw = await payTwiceInOneBatch(r);
    const snap = await snapshot(node.url);
    const hash = await broadcast(node.url, raw);
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => ((await get(r.id)).proof_status === 'verified' ? true : null));
    const before = await waitFor(async () => {
      const rows = await kept(hash);
      return rows.length ? rows : null;
    });
    expect(before).toEqual([{ log_index: 1, reason: 'request_already_verified', pending_request_id: null }]);

    const at = await reorgAbove(snap, raw);
    expect(await kept(hash)).toEqual([
      { log_index: 1, reason: 'unconfirmed_claim_moving', pending_request_id: r.id },
      { log_index: 2, reason: 'unconfirmed_claim_moving', pending_request_id: r.id },
    ]);
    await finalityMovesTheClaim(r.id, at);
    const after = await waitFor(async () => {
      const rows = await kept(hash);
      return rows.length === 1 && rows[0].pending_request_id === null ? rows : null;
    });
    expect(after).toEqual([{ log_index: 2, reason: 'request_already_verified', pending_request_id: null }]);
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 1 });
  }, 60000);

  it('the same batch re-included one log earlier: one row for the one extra transfer, none left from the old block', async () => {
    const r = await newRequest();
    const raw = await payTwiceInOneBatch(r);
    const snap = await snapshot(node.url);
    await reincludeBehindAnotherLog(raw); // first mined behind a mint: logs 1 and 2
    const hash = keccak256(raw);
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => ((await get(r.id)).proof_status === 'verified' ? true : null));
    const before = await waitFor(async () => {
      const rows = await kept(hash);
      return rows.length ? rows : null;
    });
    expect(before).toEqual([{ log_index: 2, reason: 'request_already_verified', pending_request_id: null }]);

    // Alone in its block now: logs 0 and 1.
    await finalityMovesTheClaim(r.id, await reincludeAlone(snap, raw, hash));
    const after = await waitFor(async () => {
      const rows = await kept(hash);
      return rows.every((k) => k.pending_request_id === null) ? rows : null;
    });
    // Finality keeps the claim's log index where a transfer that pays sits at it (1); the other one is kept.
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 1 });
    expect(after).toEqual([{ log_index: 0, reason: 'request_already_verified', pending_request_id: null }]);
  }, 60000);

  it('a settled claim\'s transaction seen in another block (a view finality no longer follows): nothing held', async () => {
    const { r, raw, snap, hash } = await paidByOneTransfer();
    // As if twice N deep already (settled, no longer re-read), when a lagging backend serves another branch.
    await sql(`UPDATE payment_requests SET claim_settled_at = now() WHERE id = $1`, [r.id]);

    await reorgAbove(snap, raw);
    expect(await kept(hash)).toEqual([]);
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 0 });
  }, 60000);

  it('a batch paying the request and an amount nobody asked, re-included one log earlier: the other stays kept', async () => {
    const r = await newRequest();
    const stray = r.amount + 7n;
    const raw = await batchOf([r.amount, stray]);
    const snap = await snapshot(node.url);
    await reincludeBehindAnotherLog(raw); // first mined behind a mint: the claim at log 1, the stray at log 2
    const hash = keccak256(raw);
    await mine(node.url, CONFIRMATIONS);
    await waitFor(async () => ((await get(r.id)).proof_status === 'verified' ? true : null));
    await waitFor(async () => ((await kept(hash)).length ? true : null));
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 1 });

    // Alone now: the claim's transfer at log 0, the stray at log 1, the index the claim still names.
    await finalityMovesTheClaim(r.id, await reincludeAlone(snap, raw, hash));
    const after = await waitFor(async () => {
      const rows = await kept(hash);
      return rows.every((k) => k.pending_request_id === null) ? rows : null;
    });
    expect(await claimed(r.id)).toMatchObject({ claimed_log_index: 0 });
    expect(after).toEqual([{ log_index: 1, reason: 'no_open_request_for_amount', pending_request_id: null }]);
  }, 60000);
});
