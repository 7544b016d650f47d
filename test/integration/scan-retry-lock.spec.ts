import { Wallet } from 'ethers';
import { DEV_KEYS, mine, rpc as nodeRpc, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { type TestService } from '../support/app';
import { sql } from '../support/db';
import { call } from '../support/http';
import { LaggingRpc, startLaggingChain, startScanningService, stopScanning } from '../support/lagging-rpc';
import { eventsOf, holdUnknownTransfers, keptOf, proofOf, scannedThroughTip } from '../support/scan-state';
import { waitFor } from '../support/wait';

/**
 * A retry round of undecided transfers waits on the RPC (a slow backend: here a receipt call that hangs until
 * the test lets it answer) without holding anything in the database: no scan lock, no pooled connection in an
 * open transaction. Two instances scan the same chain; while one's retry round waits, the other scans the
 * token and pays what it finds, and leaves the transfer being retried to that round. The RPC timeout is
 * longer than the test's hold, so the call really waits. CONFIRMATIONS = 3.
 */
const CONFIRMATIONS = 3;
const PAYER = DEV_KEYS[1];
const ENV = { CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS), CHAIN_LIVE_RPC_URL: '', CHAIN_RPC_TIMEOUT_MS: '60000' };
let node: LocalNode;
let rpc: LaggingRpc;
let token: string;
let chainId: string;
let svc: TestService;
let second: TestService | undefined;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

beforeAll(async () => {
  ({ node, token, rpc } = await startLaggingChain(PAYER));
  chainId = BigInt(await nodeRpc<string>(node.url, 'eth_chainId')).toString();
  svc = await startScanningService(rpc, token, ENV);
  second = await startScanningService(rpc, token, ENV);
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  rpc?.catchUp();
  await second?.close();
  await stopScanning(svc, rpc, node);
});

let fiat = 700;
async function newRequest(): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: (fiat += 13) },
  });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}

const stored = proofOf;
const events = eventsOf;
const kept = keptOf;
/** What a scan of the token takes first; an autocommit statement, so free again at once. */
const scanLockFree = async () =>
  (await sql<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext('chain-scan:' || $1 || ':' || $2)) AS ok`, [
    chainId, token.toLowerCase(),
  ]))[0].ok;
const openTransactions = async () =>
  (await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
  ))[0].n;
const scanned = () => scannedThroughTip(node.url, token, CONFIRMATIONS);

/** A payment the scan found and could not decide (its receipt not found): held for `r`, retried on the next block. */
async function undecidedPayment(): Promise<{ r: { id: string; amount: bigint }; txHash: string }> {
  const r = await newRequest();
  const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount);
  rpc.hideReceiptOf(tx.txHash);
  await mine(node.url, CONFIRMATIONS - 1);
  expect((await waitFor(async () => (await kept(tx.txHash))[0])).reason).toBe('unconfirmed_not_mined');
  return { r, txHash: tx.txHash };
}

it('a retry round waiting on the RPC holds no scan lock and no connection; the other instance scans meanwhile', async () => {
  const { r, txHash } = await undecidedPayment();
  // The receipt is there again, but the next call for it (a retry round's, on the next block) hangs.
  rpc.catchUp();
  rpc.holdReceiptOf(txHash);
  await mine(node.url, 1);
  await waitFor(async () => rpc.holdingReceipt);
  const calls = rpc.receiptCallsOf(txHash);
  try {
    // While it waits: the token's scan lock is free (but for the other instance's short scans), and no
    // pooled connection sits in an open transaction.
    await waitFor(scanLockFree);
    await waitFor(async () => (await openTransactions()) === 0);
    // The other instance scans the token meanwhile, and leaves the transfer being retried alone.
    const r2 = await newRequest();
    const tx2 = await transferToken(node.url, token, PAYER, merchant.wallet.address, r2.amount);
    await mine(node.url, CONFIRMATIONS - 1);
    await waitFor(async () => (await stored(r2.id)).proof_status === 'verified', 30000);
    expect((await stored(r2.id)).tx_hash).toBe(tx2.txHash);
    expect(rpc.holdingReceipt).toBe(true);
    expect(rpc.receiptCallsOf(txHash)).toBe(calls);
    expect((await kept(txHash))[0]).toMatchObject({ reason: 'unconfirmed_not_mined', pending_request_id: r.id });
    expect(await events(r2.id)).toEqual(['payment.proof_verified']);
  } finally {
    rpc.releaseReceipt();
  }
  // The slow answer comes: the transfer is decided once.
  await waitFor(async () => (await stored(r.id)).proof_status === 'verified', 30000);
  expect(await stored(r.id)).toMatchObject({ tx_hash: txHash, proof_source: 'chain_scan' });
  await waitFor(async () => (await kept(txHash)).length === 0, 30000);
  await mine(node.url, 2);
  await scanned();
  expect(await events(r.id)).toEqual(['payment.proof_verified']);
}, 120_000);

it('a payer\'s proof that verifies while a retry round waits on the RPC wins: verified once, by the payer', async () => {
  const { r, txHash } = await undecidedPayment();
  rpc.catchUp();
  rpc.holdReceiptOf(txHash);
  await mine(node.url, 1);
  await waitFor(async () => rpc.holdingReceipt);
  try {
    const submitted = await call(svc.publicUrl, 'POST', `/pay/api/${r.id}/proof`, { body: { tx_hash: txHash } });
    expect(submitted.status).toBe(200);
    await waitFor(async () => (await stored(r.id)).proof_status === 'verified', 30000);
    expect(await stored(r.id)).toMatchObject({ tx_hash: txHash, proof_source: 'payer' });
  } finally {
    rpc.releaseReceipt();
  }
  // The round's late answer finds the request verified by this very transfer: the held row goes, nothing more.
  await waitFor(async () => (await kept(txHash)).length === 0, 30000);
  await mine(node.url, 2);
  await scanned();
  expect(await kept(txHash)).toEqual([]);
  expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
  expect((await stored(r.id)).proof_source).toBe('payer');
}, 120_000);

it('a round that stops on failures puts back what it did not try: the next scans try it, not its lease\'s end', async () => {
  const r = await newRequest();
  // Twenty transfers the node is asked about, all due at once. However the (up to four) rounds of the two
  // instances share them out, one leases at least four, and stops after its first three failures.
  rpc.failMethod('eth_getTransactionReceipt'); // a rate-limited endpoint: every try fails
  await holdUnknownTransfers(node.url, token, new Wallet(PAYER).address, merchant.wallet.address, r, 20);
  try {
    // Each is tried within a few scans (3 per round), not left leased for minutes.
    await waitFor(async () => {
      const [u] = await sql<{ untried: number }>(
        `SELECT count(*) FILTER (WHERE retries = 0)::int AS untried FROM unmatched_transfers WHERE pending_request_id = $1`, [r.id]);
      return u.untried === 0;
    }, 20000);
    // Put back, not given up: still held for their request.
    const [left] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM unmatched_transfers WHERE pending_request_id = $1`, [r.id]);
    expect(left.n).toBe(20);
  } finally {
    rpc.catchUp();
    await sql(`DELETE FROM unmatched_transfers WHERE pending_request_id = $1`, [r.id]);
  }
}, 60_000);
