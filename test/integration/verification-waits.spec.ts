import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Wallet } from 'ethers';
import type { Mode } from '../../src/config/config';
import type { ChainReaderFactory } from '../../src/modules/chain/asset-registry';
import type { ChainReader } from '../../src/modules/chain/chain-reader';
import { EthersChainReader } from '../../src/modules/chain/ethers-chain-reader';
import {
  DEV_KEYS, broadcast, deployToken, findFreePort, mine, mint, rpc, sendTokenTransfer, signTokenTransfer, startLocalNode,
  transferToken, withPending, type LocalNode,
} from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { sleep, waitFor } from '../support/wait';

/**
 * Issue 10 point 2, counted at the ChainReader port: every call of the service's readers goes through a
 * counting wrapper (ChainModule.forRoot's readerFactory) over the real JSON-RPC reader. Two nodes: the test
 * mode's chain (A) and the live mode's chain (B), so "only the chain that advanced" can be seen.
 */
const CONFIRMATIONS = 30;
const BACKOFF_MS = 200;
const GIVE_UP_MS = 3000;
const PAYER = DEV_KEYS[1];

interface Call {
  mode: Mode;
  method: string;
  hash: string | null;
  at: number;
  /** Called from a verification run (the frame is on the stack when the call starts). */
  byJob: boolean;
}
const calls: Call[] = [];

/** Whether the call comes from a verification run: its frame shows as `VerificationService.x [as verify]`. */
function isJob(): boolean {
  return /VerificationService\.\S+ \[as verify\]|VerificationService\.verify /.test(new Error().stack ?? '');
}

function counting(mode: Mode, inner: ChainReader): ChainReader {
  const log = (method: string, hash: string | null = null) =>
    calls.push({ mode, method, hash: hash?.toLowerCase() ?? null, at: Date.now(), byJob: isJob() });
  return {
    chainId: () => inner.chainId(),
    tip: () => (log('tip'), inner.tip()),
    finalizedBlock: () => (log('finalizedBlock'), inner.finalizedBlock()),
    block: (n) => (log('block'), inner.block(n)),
    receipt: (h) => (log('receipt', h), inner.receipt(h)),
    transaction: (h) => (log('transaction', h), inner.transaction(h)),
    transfers: (q) => (log('transfers'), inner.transfers(q)),
    tokenInfo: (t) => inner.tokenInfo(t),
    isValidSignature: (s, d, sig) => inner.isValidSignature(s, d, sig),
  };
}
const readerFactory: ChainReaderFactory = (mode, chain) => counting(mode, new EthersChainReader(chain.rpcUrl, 2000));
const receipts = (hash: string) => calls.filter((c) => c.method === 'receipt' && c.hash === hash);

let a: LocalNode;
let b: LocalNode;
let tokenA: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

beforeAll(async () => {
  [a, b] = await Promise.all([startLocalNode({ port: await findFreePort() }), startLocalNode({ port: await findFreePort() })]);
  const [ta, tb] = await Promise.all([
    deployToken(a.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 }),
    deployToken(b.url, { name: 'Live USD', symbol: 'LUSD', decimals: 6 }),
  ]);
  tokenA = ta;
  await mint(a.url, tokenA, new Wallet(PAYER).address, 10n ** 15n);
  // Hashes earlier files of this jest worker left attached (their services gone) would get their jobs back at
  // this service's start (ScheduledProcessor's re-drive), and their polling would count as this file's job
  // runs: their claim windows are closed first.
  await sql(`UPDATE payment_requests SET claim_until = now() WHERE proof_status = 'attached' AND claim_until > now()`);
  svc = await startService({
    worker: true,
    chain: { readerFactory },
    env: {
      CHAIN_TEST_RPC_URL: a.url,
      CHAIN_TEST_TOKEN_ADDRESS: tokenA,
      CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS),
      CHAIN_LIVE_RPC_URL: b.url,
      CHAIN_LIVE_TOKEN_ADDRESS: tb,
      // Only the head watcher wakes a job waiting for a block within a test's time.
      VERIFY_POLL_MS: '600000',
      HEAD_POLL_MS: '50',
      VERIFY_NOT_FOUND_BACKOFF_MS: String(BACKOFF_MS),
      VERIFY_NOT_FOUND_GIVE_UP_MS: String(GIVE_UP_MS),
      // The scan reads logs, never receipts of these hashes; kept slow so it stays out of the way (and so a
      // payment verified here was verified by the payer's job: proof_source 'payer').
      CHAIN_SCAN_INTERVAL_MS: '3600000',
    },
  });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 90000);

afterAll(async () => {
  await svc?.close();
  await closeSql();
  await Promise.all([a?.stop(), b?.stop()]);
});

let fiat = 300;
async function newRequest(): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: (fiat += 11) },
  });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}
const submit = (id: string, txHash: string) => call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: txHash } });

describe('the head watcher', () => {
  it('wakes only the jobs of the chain that advanced, each at most once per block', async () => {
    const hashes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await newRequest();
      const tx = await transferToken(a.url, tokenA, PAYER, merchant.wallet.address, r.amount);
      expect((await submit(r.id, tx.txHash)).body.proof_status).toBe('attached');
      hashes.push(tx.txHash);
    }
    // Each job has looked once and now waits for confirmations (30 needed).
    await waitFor(async () => hashes.every((h) => receipts(h).length >= 2)); // the pre-check's and the job's
    await sleep(300);
    const before = hashes.map((h) => receipts(h).length);
    const jobRuns = () => calls.filter((c) => c.mode === 'test' && c.method === 'tip' && c.byJob).length;
    const runsBefore = jobRuns();

    // The live chain moves: the test chain's waiting jobs are not woken.
    for (let i = 0; i < 5; i++) {
      await mine(b.url, 1);
      await sleep(150);
    }
    expect(calls.filter((c) => c.mode === 'live' && c.method === 'tip').length).toBeGreaterThan(5);
    expect(hashes.map((h) => receipts(h).length)).toEqual(before);
    expect(jobRuns()).toBe(runsBefore); // not even woken
    expect(runsBefore).toBeGreaterThanOrEqual(3);

    // The test chain moves block by block: one receipt per waiting job per block, never more.
    for (let block = 1; block <= 4; block++) {
      await mine(a.url, 1);
      await waitFor(async () => hashes.every((h, i) => receipts(h).length >= before[i] + block));
      await sleep(300); // six head ticks on the same tip
      expect(hashes.map((h) => receipts(h).length)).toEqual(before.map((n) => n + block));
    }
  }, 60000);
});

describe('a hash the node does not know', () => {
  it('is looked up again after doubling delays, not at each block, and given up after the bound with a note', async () => {
    const r = await newRequest();
    const hash = await withPending(a.url, async () => {
      const h = (await sendTokenTransfer(a.url, tokenA, PAYER, merchant.wallet.address, r.amount)).toLowerCase();
      expect((await submit(r.id, h)).body.proof_status).toBe('attached'); // pending: accepted
      // The node forgets it (dropped from the mempool): the verification no longer finds it anywhere.
      await rpc(a.url, 'hardhat_dropTransaction', [h]);
      return h;
    });
    const from = Date.now();
    // Blocks keep coming the whole time; a backing-off job must not be woken by them.
    let mining = true;
    const miner = (async () => {
      while (mining) {
        await mine(a.url, 1);
        await sleep(100);
      }
    })();
    try {
      await waitFor(async () => (await call(svc.publicUrl, 'GET', `/pay/api/${r.id}`)).body.proof_note === 'transaction_not_found', GIVE_UP_MS + 5000, 100);
    } finally {
      mining = false;
      await miner;
    }
    const lookups = calls.filter((c) => c.method === 'transaction' && c.hash === hash && c.at >= from - 500).map((c) => c.at);
    // 0, 200, 600, 1400, 3000 (the last capped at the bound): about five looks in three seconds of ~25 blocks.
    // The window may also hold the submit's own pre-check, and on a loaded machine (CI beside other work) a
    // job's re-run after a stalled lock: 7 was seen there. Looking at each block would be 25 or more.
    expect(lookups.length).toBeGreaterThanOrEqual(3);
    expect(lookups.length).toBeLessThanOrEqual(8);
    const gaps = lookups.slice(1).map((t, i) => t - lookups[i]);
    // The delays grow (200, 400, 800, 1600): some gap reaches the third delay, which a look at each block (~100
    // ms apart) never leaves. Against the configured delays, not the first measured gap: on a loaded machine
    // (fresh-clone CI) the first gap stretched to 658 ms while the widest was 1,105 ms. A constant delay fails
    // the count above (15 looks in 3 s).
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(4 * BACKOFF_MS);
    const [row] = await sql(`SELECT status, proof_status, tx_hash, verify_note FROM payment_requests WHERE id = $1`, [r.id]);
    expect(row).toMatchObject({ proof_status: 'attached', tx_hash: hash, verify_note: 'transaction_not_found' });
    // Stopped: no more looks.
    const after = calls.filter((c) => c.hash === hash).length;
    await sleep(800);
    expect(calls.filter((c) => c.hash === hash).length).toBe(after);
  }, 30000);
});

describe('a hash given up on that turns up later', () => {
  it('is verified when the payer submits it again: the finished job is replaced, not kept as a duplicate', async () => {
    const r = await newRequest();
    // Signed once, so a later broadcast is the very same transaction (same hash), as a wallet re-sending it.
    const signed = await signTokenTransfer(a.url, tokenA, PAYER, merchant.wallet.address, r.amount);
    const hash = await withPending(a.url, async () => {
      const h = await broadcast(a.url, signed);
      expect((await submit(r.id, h)).body.proof_status).toBe('attached'); // pending: accepted
      await rpc(a.url, 'hardhat_dropTransaction', [h]);
      return h;
    });
    // The job looks for it until the bound, then gives up with a note: its BullMQ job has completed. (A block
    // wakes a job that saw it pending; from then on it is unknown and backs off.)
    await waitFor(async () => {
      await mine(a.url, 1);
      return (await call(svc.publicUrl, 'GET', `/pay/api/${r.id}`)).body.proof_note === 'transaction_not_found';
    }, GIVE_UP_MS + 5000, 200);

    // The wallet sends it again, it is mined and confirmed, and the payer submits the same hash again.
    expect(await broadcast(a.url, signed)).toBe(hash);
    await mine(a.url, CONFIRMATIONS);
    const again = await submit(r.id, hash);
    expect(again.status).toBe(200);
    const verified = await waitFor(async () => {
      const [row] = await sql(`SELECT proof_status, proof_source, tx_hash FROM payment_requests WHERE id = $1`, [r.id]);
      return row.proof_status === 'verified' ? row : null;
    }, 10000, 100);
    expect(verified).toEqual({ proof_status: 'verified', proof_source: 'payer', tx_hash: hash });
  }, 30000);
});

describe('a hash the chain says does not pay', () => {
  it('submitted again does not run its verification again: the verdict of a mined transaction stands', async () => {
    const r = await newRequest();
    const hash = await withPending(a.url, async () => {
      // Pending, so the pre-check accepts it; mined, it underpays.
      const h = (await sendTokenTransfer(a.url, tokenA, PAYER, merchant.wallet.address, r.amount - 1n)).toLowerCase();
      expect((await submit(r.id, h)).body.proof_status).toBe('attached');
      return h;
    });
    await mine(a.url, CONFIRMATIONS);
    await waitFor(async () => (await call(svc.publicUrl, 'GET', `/pay/api/${r.id}`)).body.proof_note === 'underpaid', 10000, 100);
    const queue = svc.app.get<Queue>(getQueueToken('verification'), { strict: false });
    const jobId = `verify-${r.id}-${hash}`;
    const finished = await waitFor(async () => (await queue.getJob(jobId))?.finishedOn ?? null, 5000, 50);
    const lookups = receipts(hash).length;

    // Each submission of the same hash would otherwise cost a fresh run (its RPC calls) for the same answer.
    // A submission answers only once its re-queue (if any) was added (AfterCommit waits for it), so a new run
    // shows at once: the finished job replaced.
    for (let i = 0; i < 3; i++) expect((await submit(r.id, hash)).status).toBe(200);
    expect((await queue.getJob(jobId))?.finishedOn).toBe(finished);
    expect(receipts(hash).length).toBe(lookups);
  }, 30000);
});
