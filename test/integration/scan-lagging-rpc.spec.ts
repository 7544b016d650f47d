import { Wallet } from 'ethers';
import {
  DEV_KEYS, broadcast, deployToken, findFreePort, mine, mint, revert, rpc as nodeRpc, signTokenTransfer, snapshot,
  startLocalNode, transferToken, type LocalNode,
} from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { LaggingRpc } from '../support/lagging-rpc';
import { waitFor } from '../support/wait';

/**
 * The chain scan behind a load-balanced RPC whose backends are not in step (a real Hardhat node behind a
 * JSON-RPC endpoint that can answer like a backend a block behind). The scan reads the tip from the
 * up-to-date backend and finds a transfer exactly N deep; the verification then reads the tip from the
 * lagging one and cannot decide yet. Such a transfer must be verified once the RPC is consistent again,
 * once, and never when a reorg removed it. CONFIRMATIONS = 3.
 */
const CONFIRMATIONS = 3;
const PAYER = DEV_KEYS[1];
let node: LocalNode;
let rpc: LaggingRpc;
let token: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  await mint(node.url, token, new Wallet(PAYER).address, 10n ** 15n);
  rpc = new LaggingRpc(node.url);
  await rpc.start();
  svc = await startService({
    worker: true,
    env: {
      CHAIN_TEST_RPC_URL: rpc.url,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS),
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '100',
      CHAIN_SCAN_INTERVAL_MS: '300',
      EXPIRY_SWEEP_INTERVAL_MS: '300',
      CHAIN_RPC_TIMEOUT_MS: '2000',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await rpc?.stop();
  await node?.stop();
});

let fiat = 500;
async function newRequest(price = (fiat += 13)): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: price },
  });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}

/** Polled from the database: polling the API would run into its rate limit. */
const stored = async (id: string) =>
  (await sql<{ proof_status: string; tx_hash: string | null; proof_source: string | null }>(
    `SELECT proof_status, tx_hash, proof_source FROM payment_requests WHERE id = $1`, [id]))[0];
const events = async (id: string) =>
  (await sql<{ event: string }>(`SELECT event FROM webhook_events WHERE request_id = $1 ORDER BY recorded_at`, [id])).map((e) => e.event);
const locked = async (id: string) =>
  (await sql<{ amount_locked: boolean }>(`SELECT amount_locked FROM payment_requests WHERE id = $1`, [id]))[0].amount_locked;
const claimUntil = async (id: string) =>
  Math.floor((await sql<{ claim_until: Date }>(`SELECT claim_until FROM payment_requests WHERE id = $1`, [id]))[0].claim_until.getTime() / 1000);
const unmatched = (txHash: string) => sql<{ reason: string }>(`SELECT reason FROM unmatched_transfers WHERE tx_hash = $1`, [txHash]);
const cursor = async (): Promise<number> => {
  const [row] = await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE token_address = $1`, [token.toLowerCase()]);
  return row ? Number(row.last_block) : -1;
};
/** Resolves once a whole scan ran over the node's current tip, so anything it retries was retried after now. */
const scannedThroughTip = async () => {
  const safe = Number(await nodeRpc<string>(node.url, 'eth_blockNumber')) - CONFIRMATIONS + 1;
  await waitFor(async () => (await cursor()) >= safe);
};

describe('a transfer the scan found while the RPC lagged a block behind', () => {
  it('is verified once the RPC is in step again, exactly once, and leaves no unmatched row', async () => {
    const r = await newRequest();
    const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount); // 1 confirmation
    rpc.lagAfterLogsOf(tx.txHash, 1);
    await mine(node.url, CONFIRMATIONS - 1); // N: the scan finds it now, then reads a tip one lower

    // The scan saw it and could not decide: the verification waited for a confirmation it already had.
    const row = await waitFor(async () => (await unmatched(tx.txHash))[0]);
    expect(row.reason).toBe('unconfirmed_confirmations');
    expect(rpc.lagging).toBe(true);
    expect((await stored(r.id)).proof_status).toBe('none');

    rpc.catchUp();
    await mine(node.url, 1);
    const verified = await waitFor(async () => {
      const b = await stored(r.id);
      return b.proof_status === 'verified' ? b : null;
    });
    expect(verified).toMatchObject({ tx_hash: tx.txHash, proof_source: 'chain_scan' });
    // A payment is not an unmatched transfer: the row kept while it was undecided is gone.
    await scannedThroughTip();
    expect(await unmatched(tx.txHash)).toEqual([]);
    await mine(node.url, 2);
    await scannedThroughTip();
    expect(await events(r.id)).toEqual(['payment.proof_verified']);
  });

  it('is never verified when a reorg removed it, and is verified once re-included', async () => {
    const r = await newRequest();
    const signed = await signTokenTransfer(node.url, token, PAYER, merchant.wallet.address, r.amount);
    const snap = await snapshot(node.url); // before the payment's block
    const hash = await broadcast(node.url, signed); // mined at once (automine)
    rpc.lagAfterLogsOf(hash, 1);
    await mine(node.url, CONFIRMATIONS - 1);
    await waitFor(async () => (await unmatched(hash)).length > 0);
    expect(rpc.lagging).toBe(true);

    // The payment's block is replaced by a longer branch without it; the RPC is in step again.
    await revert(node.url, snap);
    await mine(node.url, CONFIRMATIONS + 3);
    rpc.catchUp();
    await scannedThroughTip();
    await mine(node.url, 1);
    await scannedThroughTip();
    expect((await stored(r.id)).proof_status).toBe('none');
    expect(await events(r.id)).toEqual([]);
    const [still] = await unmatched(hash);
    expect(still.reason).toMatch(/^unconfirmed_(unknown|not_mined)$/);

    // The same transaction mined again on the canonical chain pays, once.
    expect(await broadcast(node.url, signed)).toBe(hash);
    await mine(node.url, CONFIRMATIONS - 1);
    await waitFor(async () => (await stored(r.id)).proof_status === 'verified');
    expect((await stored(r.id)).tx_hash).toBe(hash);
    await mine(node.url, 2);
    await scannedThroughTip();
    expect(await events(r.id)).toEqual(['payment.proof_verified']);
    expect(await unmatched(hash)).toEqual([]);
  });

  // Last: it moves the chain's clock past the requests' windows for good.
  it('keeps the amount of its request held past the window as the scan sees it, until it is decided', async () => {
    const price = (fiat += 13);
    const r = await newRequest(price);
    const other = await newRequest(); // no payment: its amount is released when the window closes
    const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount);
    rpc.hideReceiptOf(tx.txHash);
    await mine(node.url, CONFIRMATIONS - 1);
    expect((await waitFor(async () => (await unmatched(tx.txHash))[0])).reason).toBe('unconfirmed_not_mined');

    // The scan reads blocks stamped after both claim windows (plus the 60 s of tolerance).
    await nodeRpc(node.url, 'evm_setNextBlockTimestamp', [Math.max(await claimUntil(r.id), await claimUntil(other.id)) + 120]);
    await mine(node.url, CONFIRMATIONS + 1);
    await scannedThroughTip();
    await waitFor(async () => !(await locked(other.id)));
    expect(await locked(r.id)).toBe(true);
    // So the same price still gets another amount, and the transfer can only name r.
    expect((await newRequest(price)).amount).not.toBe(r.amount);
    expect((await unmatched(tx.txHash))[0].reason).toBe('unconfirmed_not_mined');

    // The receipt is found again: the transfer was mined inside r's window, so it pays r; then the amount goes.
    rpc.catchUp();
    await waitFor(async () => (await stored(r.id)).proof_status === 'verified');
    expect((await stored(r.id)).tx_hash).toBe(tx.txHash);
    await waitFor(async () => !(await locked(r.id)));
    expect(await unmatched(tx.txHash)).toEqual([]);
    expect(await events(r.id)).toEqual(['payment.proof_verified']);
  });
});

