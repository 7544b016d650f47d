import { rpc as nodeRpc, DEV_KEYS, mine, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { type TestService } from '../support/app';
import { sql } from '../support/db';
import { call } from '../support/http';
import { LaggingRpc, startLaggingChain, startScanningService, stopScanning } from '../support/lagging-rpc';
import { eventsOf, keptOf, proofOf, scannedThroughTip } from '../support/scan-state';
import { waitFor } from '../support/wait';

/**
 * The main chain scan holds no transaction open across its RPC calls (ChainScanService.scanToken). It used to
 * hold one (its advisory lock) for the whole range, idle in transaction all along: with the server bounding
 * that (idle_in_transaction_session_timeout, as managed Postgres often sets; or an operator ending such
 * sessions), every scan longer than the bound was killed and the cursor never moved. Here the bound is 1 s on
 * this worker's database and each block read and log read takes 100 ms, so a scan of 12 blocks takes ~3 s.
 * Its lock is now a session lock on a connection of its own: that connection killed mid-scan (an operator's
 * pg_terminate_backend) neither ends the process nor leaves the lock held, and the scans go on.
 */
const PAYER = DEV_KEYS[1];
const CATCH_UP_BLOCKS = 12;
let node: LocalNode;
let rpc: LaggingRpc;
let token: string;
let chainId: string;
let database: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: import('ethers').Wallet };

beforeAll(async () => {
  // This jest worker's own database (TEST_DATABASE_NAME, or its _wN for another worker). A setting of the
  // database reaches the connections opened after it: the service's pool is opened below.
  [{ database }] = await sql<{ database: string }>(`SELECT current_database() AS database`);
  await sql(`ALTER DATABASE "${database}" SET idle_in_transaction_session_timeout = '1s'`);
  ({ node, token, rpc } = await startLaggingChain(PAYER));
  chainId = BigInt(await nodeRpc<string>(node.url, 'eth_chainId')).toString();
  svc = await startScanningService(rpc, token, { CHAIN_TEST_CONFIRMATIONS: '1', CHAIN_LIVE_RPC_URL: '' });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60_000);

afterAll(async () => {
  if (database) await sql(`ALTER DATABASE "${database}" RESET idle_in_transaction_session_timeout`).catch(() => undefined);
  rpc?.catchUp();
  await stopScanning(svc, rpc, node);
});

let fiat = 770;
async function newRequest(): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: (fiat += 7) } });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}

const cursor = async () =>
  Number((await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE token_address = $1`, [token.toLowerCase()]))[0]?.last_block ?? -1);
const tipNow = async () => Number(await nodeRpc<string>(node.url, 'eth_blockNumber'));
/** The token's scan lock as a transaction-level probe takes it: autocommit, so free again at once. */
const scanLockFree = async () =>
  (await sql<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext('chain-scan:' || $1 || ':' || $2)) AS ok`, [chainId, token.toLowerCase()]))[0].ok;
/** The backend holding the token's scan lock (a single bigint key: its low 32 bits are objid), if any. */
const lockHolder = async () =>
  (await sql<{ pid: number }>(
    `SELECT pid FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND objsubid = 1
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND objid::bigint = (hashtext('chain-scan:' || $1 || ':' || $2)::bigint & 4294967295)`,
    [chainId, token.toLowerCase()],
  ))[0]?.pid ?? null;

/** A remote RPC: 100 ms per block read and per log read (until catchUp). */
function slowRpc(): void {
  rpc.slowMethod('eth_getLogs', 100);
  rpc.slowMethod('eth_getBlockByNumber', 100);
}

it('a scan that takes longer than the idle-in-transaction bound moves its cursor and pays what it found', async () => {
  const r = await newRequest();
  await scannedThroughTip(node.url, token, 1);
  slowRpc();
  try {
    // Paid without the hash; meanwhile the chain moved on (the worker was behind).
    const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount);
    await mine(node.url, CATCH_UP_BLOCKS);
    const tip = await tipNow();
    // One scan reads it all (~3 s); a killed one would leave the cursor where it was, however long we wait.
    await waitFor(async () => (await cursor()) >= tip, 20_000, 250);
    await waitFor(async () => (await proofOf(r.id)).proof_status === 'verified', 10_000, 250);
    expect(await proofOf(r.id)).toMatchObject({ tx_hash: tx.txHash, proof_source: 'chain_scan' });
    expect(await eventsOf(r.id)).toEqual(['payment.proof_verified']);
  } finally {
    rpc.catchUp();
  }
}, 60_000);

it('the scan lock\'s connection killed mid-scan: the process goes on, the lock is not left held, the payment verifies once', async () => {
  const r = await newRequest();
  await scannedThroughTip(node.url, token, 1);
  slowRpc();
  let killed: number | null = null;
  try {
    const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount);
    await mine(node.url, CATCH_UP_BLOCKS);
    const tip = await tipNow();
    // A scan of the new blocks holds the lock (~3 s); its connection sits idle, not in a transaction.
    await waitFor(async () => (killed = await lockHolder()) !== null, 10_000, 20);
    const [{ state }] = await sql<{ state: string }>(`SELECT state FROM pg_stat_activity WHERE pid = $1`, [killed]);
    expect(state).not.toMatch(/in transaction/);
    await sql(`SELECT pg_terminate_backend($1)`, [killed]);
    // The scans go on (that one's reads too, on other connections; another worker may scan the same range).
    await waitFor(async () => (await cursor()) >= tip, 20_000, 250);
    await waitFor(async () => (await proofOf(r.id)).proof_status === 'verified', 10_000, 250);
    expect(await proofOf(r.id)).toMatchObject({ tx_hash: tx.txHash, proof_source: 'chain_scan' });
  } finally {
    rpc.catchUp();
  }
  // No pooled connection keeps the lock: free between scans, and never again held by the killed backend.
  await waitFor(scanLockFree, 10_000, 50);
  expect(await lockHolder()).not.toBe(killed);
  // Later scans still run and pay.
  const r2 = await newRequest();
  const tx2 = await transferToken(node.url, token, PAYER, merchant.wallet.address, r2.amount);
  await mine(node.url, 1);
  await waitFor(async () => (await proofOf(r2.id)).proof_status === 'verified', 15_000, 250);
  expect((await proofOf(r2.id)).tx_hash).toBe(tx2.txHash);
  await scannedThroughTip(node.url, token, 1);
  expect(await eventsOf(r.id)).toEqual(['payment.proof_verified']);
  expect(await keptOf(tx2.txHash)).toEqual([]);
}, 90_000);
