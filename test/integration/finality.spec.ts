import { randomBytes } from 'node:crypto';
import { Interface, JsonRpcProvider, MaxUint256, parseUnits, Wallet } from 'ethers';
import {
  broadcast, deployContract, deployToken, DEV_KEYS, findFreePort, mine, mint, revert, rpc, sendCall, setAutomine, snapshot,
  startLocalNode, transferToken, type LocalNode,
} from '../../scripts/chain/local-node';
import { DataSource } from 'typeorm';
import { AlertsService } from '../../src/modules/alerts/alerts.service';
import { FinalityService } from '../../src/modules/requests/application/finality.service';
import { ClaimFinalityRepository } from '../../src/modules/requests/infrastructure/claim-finality.repository';
import { ADMIN_TOKEN, startFinalityService, type TestService } from '../support/app';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { call } from '../support/http';
import { sleep, waitFor } from '../support/wait';
import { closeSql, sql } from '../support/db';

/**
 * Issue 10 point 3 (DESIGN §7 "Finality") on a real chain of its own: CONFIRMATIONS = 2, so a claim is
 * verified at 2 confirmations and settled at 4. A payment reorged away after verification raises one alert
 * (admin API, metric, error log) and no second webhook; a payment that stays canonical is settled and never
 * alerts.
 */
const CONFIRMATIONS = 2;
const CHECK_MS = 150;
const PAYER = DEV_KEYS[1];
let node: LocalNode;
let token: string;
let svc: TestService;
/** Direct SQL on the run's database, for arranging and checking stored state. */
const db = { query: sql };
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  await mint(node.url, token, new Wallet(PAYER).address, 10n ** 15n);
  // The run's database holds other specs' verified claims, made on another node with the same chain id: to
  // this spec's node they would all look reorged away. Only this spec's claims are left for its finality job.
  await db.query(
    `UPDATE payment_requests SET claim_settled_at = now()
      WHERE proof_status = 'verified' AND claim_settled_at IS NULL AND claim_lost_at IS NULL`,
  );
  svc = await startFinalityService(node.url, token, CONFIRMATIONS, CHECK_MS);
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await node?.stop();
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

const get = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: partner.testKey })).body;
const submit = (id: string, txHash: string) => call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: txHash } });
const events = async (id: string) =>
  (await db.query<{ event: string }>(`SELECT event FROM webhook_events WHERE request_id = $1 ORDER BY recorded_at`, [id])).map((e) => e.event);
const claimRow = async (id: string) =>
  (await db.query<{ claimed_block_number: string | null; claimed_block_hash: string | null; claim_settled_at: Date | null; claim_lost_at: Date | null }>(
    `SELECT claimed_block_number, claimed_block_hash, claim_settled_at, claim_lost_at FROM payment_requests WHERE id = $1`,
    [id],
  ))[0];
const alerts = (query = '') => call(svc.adminUrl, 'GET', `/admin/api/alerts${query}`, { key: ADMIN_TOKEN });
const metric = async (line: RegExp): Promise<number> => {
  const m = line.exec((await call(svc.adminUrl, 'GET', '/metrics', { key: ADMIN_TOKEN })).text);
  return m ? Number(m[1]) : 0;
};
const reorgedMetric = () => metric(/^prs_verified_reorged_total\{mode="test"\} (\d+)$/m);
const blockHash = async (n: number): Promise<string> => {
  const res = await fetch(node.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] }),
  });
  return ((await res.json()) as { result: { hash: string } }).result.hash.toLowerCase();
};

/** Pays r, submits the hash and mines to exactly CONFIRMATIONS; resolves once verified, with the payment's block. */
async function payAndVerify(r: { id: string; amount: bigint }): Promise<{ txHash: string; blockNumber: number }> {
  const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, r.amount); // 1 confirmation
  expect((await submit(r.id, tx.txHash)).status).toBe(200);
  await mine(node.url, CONFIRMATIONS - 1);
  await waitFor(async () => (await get(r.id)).proof_status === 'verified');
  return tx;
}

describe('a verified payment that stays canonical', () => {
  it('records its block, is settled at twice the depth and not before, and never alerts', async () => {
    const r = await newRequest();
    const tx = await payAndVerify(r);
    const verified = await claimRow(r.id);
    expect(Number(verified.claimed_block_number)).toBe(tx.blockNumber);
    expect(verified.claimed_block_hash).toBe(await blockHash(tx.blockNumber));

    await mine(node.url, 1); // 3 confirmations: deep enough to verify, not to settle
    await sleep(CHECK_MS * 5);
    expect((await claimRow(r.id)).claim_settled_at).toBeNull();

    await mine(node.url, 1); // 4 = 2 × CONFIRMATIONS
    await waitFor(async () => (await claimRow(r.id)).claim_settled_at !== null);
    expect((await claimRow(r.id)).claim_lost_at).toBeNull();
    expect((await alerts(`?request_id=${r.id}`)).body.alerts).toEqual([]);
    expect((await get(r.id)).proof_status).toBe('verified');
    expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
  });
});

describe('a verified payment reorged away', () => {
  it('keeps proof_status verified and raises exactly one alert: admin API, metric, no second webhook', async () => {
    const before = await reorgedMetric();
    const r = await newRequest();
    const snap = await snapshot(node.url); // before the payment's block
    const tx = await payAndVerify(r);
    expect(Number((await claimRow(r.id)).claimed_block_number)).toBe(tx.blockNumber);
    const oldHash = await blockHash(tx.blockNumber);

    await revert(node.url, snap); // drops the payment's block and the transaction with it
    await mine(node.url, CONFIRMATIONS * 2 + 2); // another branch, deeper than the settle depth
    expect(await blockHash(tx.blockNumber)).not.toBe(oldHash);

    const listed = (await waitFor(async () => {
      const res = await alerts(`?request_id=${r.id}`);
      return res.body.alerts.length ? res : null;
    }))!;
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ ok: true, has_more: false, limit: 50, offset: 0 });
    const [alert] = listed.body.alerts;
    expect(alert).toMatchObject({
      kind: 'verified_reorged',
      request_id: r.id,
      details: {
        mode: 'test',
        reason: 'receipt_missing',
        tx_hash: tx.txHash,
        block_number: tx.blockNumber,
        block_hash: oldHash,
        partner_id: partner.id,
        merchant_id: merchant.id,
        amount: r.amount.toString(),
      },
    });
    expect(alert.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(await reorgedMetric()).toBe(before + 1);

    // The partner was told: the request stays verified, no event follows, and the claim is no longer re-read.
    await mine(node.url, 2);
    await sleep(CHECK_MS * 5);
    expect((await get(r.id)).proof_status).toBe('verified');
    expect(await events(r.id)).toEqual(['payment.proof_attached', 'payment.proof_verified']);
    const row = await claimRow(r.id);
    expect(row.claim_lost_at).not.toBeNull();
    expect(row.claim_settled_at).toBeNull();
    expect((await alerts(`?request_id=${r.id}`)).body.alerts).toHaveLength(1);
    expect(await reorgedMetric()).toBe(before + 1);
  });
});

/** The transaction signed now and sent later (a reorg re-includes the same signed transaction). */
async function signed(key: string, to: string, data: string, tipGwei: string): Promise<string> {
  const provider = new JsonRpcProvider(node.url);
  try {
    const w = new Wallet(key, provider);
    const nonce = await provider.getTransactionCount(w.address, 'pending');
    return await w.signTransaction({
      to, data, nonce, gasLimit: 400_000n, chainId: 31337n, type: 2,
      maxFeePerGas: parseUnits('50', 'gwei'), maxPriorityFeePerGas: parseUnits(tipGwei, 'gwei'),
    });
  } finally {
    provider.destroy();
  }
}

/** Mines `raw` (signed with a tip of 1 gwei) in one block behind a mint, whose log then comes first. */
async function reincludeBehindAnotherLog(raw: string): Promise<void> {
  await setAutomine(node.url, false);
  try {
    await broadcast(node.url, await signed(DEV_KEYS[0], token, new Interface(['function mint(address,uint256)']).encodeFunctionData('mint', [Wallet.createRandom().address, 5n]), '5'));
    await broadcast(node.url, raw);
    await mine(node.url, 1);
  } finally {
    await setAutomine(node.url, true);
  }
}

/**
 * Pays r with a transaction signed once (a reorg can then mine the same one again), waits until it is verified,
 * and ends r's window a second after the payment's block, as if paid in its last second. `snap` is the chain
 * just before the payment: reverting to it drops the payment.
 */
async function payInWindowsLastSecond(provider: JsonRpcProvider, r: { id: string; amount: bigint }) {
  const data = new Interface(['function transfer(address,uint256)']).encodeFunctionData('transfer', [merchant.wallet.address, r.amount]);
  const raw = await signed(PAYER, token, data, '1');
  const snap = await snapshot(node.url);
  const sent = await provider.broadcastTransaction(raw);
  const first = (await sent.wait())!;
  const firstTime = (await provider.getBlock(first.blockNumber))!.timestamp;
  expect((await submit(r.id, sent.hash)).status).toBe(200);
  await mine(node.url, CONFIRMATIONS - 1);
  await waitFor(async () => (await get(r.id)).proof_status === 'verified');
  await db.query(`UPDATE payment_requests SET claim_until = to_timestamp($2), expires_at = to_timestamp($2) - interval '60 minutes' WHERE id = $1`, [r.id, firstTime + 1]);
  return { raw, sent, first, firstTime, snap };
}

describe('a verified payment re-included after its claim window', () => {
  it('pays nothing by the pay rule any more: the claim is lost with one verified_reorged alert, keeps holding the transfer, and no request of the same price can take it', async () => {
    const r = await newRequest();
    const provider = new JsonRpcProvider(node.url, undefined, { cacheTimeout: -1 });
    try {
      const { raw, sent, first, firstTime, snap } = await payInWindowsLastSecond(provider, r);
      expect(first.logs.map((l) => l.index)).toEqual([0]);

      // The reorg drops it; the same transaction is mined again 30 s later, past claim_until, two blocks higher,
      // behind another transaction's log (so its transfer is log 1, not 0).
      await revert(node.url, snap);
      await rpc(node.url, 'evm_setNextBlockTimestamp', [firstTime + 10]);
      await mine(node.url, 2);
      await rpc(node.url, 'evm_setNextBlockTimestamp', [firstTime + 30]);
      await reincludeBehindAnotherLog(raw);
      const again = (await provider.getTransactionReceipt(sent.hash))!;
      expect(again.blockNumber).toBe(first.blockNumber + 2);
      expect(again.logs.map((l) => l.index)).toEqual([1]);
      // The old block is at the settle depth, the new one not yet (CONFIRMATIONS 2: settled 4 deep): the claim
      // follows the transfer and holds it, and nothing is decided (a reorg back into the window would find it whole).
      await mine(node.url, 1);
      await waitFor(async () => Number((await claimRow(r.id)).claimed_block_number) === again.blockNumber);
      // One more run, here, that sees it moved and not deep: nothing decided.
      await svc.app.get(FinalityService).settle('test');
      expect((await claimRow(r.id)).claim_lost_at).toBeNull();
      expect((await alerts(`?request_id=${r.id}`)).body.alerts).toEqual([]);
      // At the settle depth it is lost, not settled.
      await mine(node.url, 2);

      const listed = (await waitFor(async () => {
        const res = await alerts(`?request_id=${r.id}`);
        return res.body.alerts.length ? res : null;
      }))!;
      const [newLog] = again.logs;
      expect(listed.body.alerts).toEqual([expect.objectContaining({
        kind: 'verified_reorged',
        details: expect.objectContaining({
          // The claim's block as last recorded: it had followed the transfer before it was lost.
          reason: 'moved_outside_window', tx_hash: sent.hash, block_number: again.blockNumber,
          moved_to: { block_number: again.blockNumber, block_hash: again.blockHash.toLowerCase(), log_index: newLog.index },
        }),
      })]);
      const row = await claimRow(r.id);
      expect(row.claim_lost_at).not.toBeNull();
      expect(row.claim_settled_at).toBeNull();
      // The claim followed its transfer, and holds it there.
      expect(Number(row.claimed_block_number)).toBe(again.blockNumber);
      const [{ claimed_log_index: held }] = await db.query(`SELECT claimed_log_index FROM payment_requests WHERE id = $1`, [r.id]);
      expect(held).toBe(newLog.index);
      expect((await get(r.id)).proof_status).toBe('verified');

      // A request of the same price now, whose window covers the new block: the transfer would pay it by the
      // pay rule, but it is the lost claim's. One payment never verifies two requests. (The first request's
      // amount is let go as the release sweep does once its window has closed by the chain's clock.)
      await db.query(`UPDATE payment_requests SET amount_locked = false WHERE id = $1`, [r.id]);
      const same = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: fiat } });
      expect(same.status).toBe(201);
      expect(BigInt(same.body.amount)).toBe(r.amount);
      // The pay rule would take the transfer for it: its window covers the block the transfer is in now.
      const [{ created_at: sameCreated }] = await db.query(`SELECT created_at FROM payment_requests WHERE id = $1`, [same.body.request_id]);
      const againTime = (await provider.getBlock(again.blockNumber))!.timestamp;
      expect(againTime * 1000).toBeGreaterThanOrEqual(new Date(sameCreated).getTime() - 60_000);
      const proof = await submit(same.body.request_id, sent.hash);
      expect(proof.status).toBe(409);
      expect(proof.body.error).toBe('tx_hash_already_used');
      expect((await get(same.body.request_id)).proof_status).toBe('none');
    } finally {
      provider.destroy();
    }
  });
});

describe('a verified payment re-included outside its window, then back inside it by a second reorg', () => {
  it('follows its transfer both times and settles where it ends, in the window: no alert', async () => {
    const r = await newRequest();
    const provider = new JsonRpcProvider(node.url, undefined, { cacheTimeout: -1 });
    try {
      const { raw, sent, first, firstTime, snap } = await payInWindowsLastSecond(provider, r);

      // First reorg: mined again two blocks higher, 30 s later, past the window; the claim follows it there.
      await revert(node.url, snap);
      const forkAgain = await snapshot(node.url);
      await rpc(node.url, 'evm_setNextBlockTimestamp', [firstTime + 10]);
      await mine(node.url, 2);
      await rpc(node.url, 'evm_setNextBlockTimestamp', [firstTime + 30]);
      await reincludeBehindAnotherLog(raw);
      const outside = (await provider.getTransactionReceipt(sent.hash))!;
      await mine(node.url, 1);
      await waitFor(async () => Number((await claimRow(r.id)).claimed_block_number) === outside.blockNumber);
      expect((await claimRow(r.id)).claim_lost_at).toBeNull();

      // Second reorg, before that block is at the settle depth: the transaction lands at the first block's
      // height again, one second later, the window's last second.
      await revert(node.url, forkAgain);
      await rpc(node.url, 'evm_setNextBlockTimestamp', [firstTime + 1]);
      await provider.broadcastTransaction(raw);
      const inside = (await provider.getTransactionReceipt(sent.hash))!;
      expect(inside.blockNumber).toBe(first.blockNumber);
      expect(inside.blockHash).not.toBe(first.blockHash);
      // Deep enough for the claim's recorded block (outside's height) to be re-read, and for inside's to settle.
      await mine(node.url, outside.blockNumber - inside.blockNumber + CONFIRMATIONS * 2);

      await waitFor(async () => (await claimRow(r.id)).claim_settled_at !== null, 15000);
      const row = await claimRow(r.id);
      expect(row).toMatchObject({ claimed_block_number: String(inside.blockNumber), claimed_block_hash: inside.blockHash.toLowerCase(), claim_lost_at: null });
      expect((await alerts(`?request_id=${r.id}`)).body.alerts).toEqual([]);
      expect((await get(r.id)).proof_status).toBe('verified');
    } finally {
      provider.destroy();
    }
  });
});

describe('GET /admin/api/alerts', () => {
  it('lists newest first with paging', async () => {
    const r = await newRequest();
    await db.query(
      `INSERT INTO alerts (kind, request_id, details, created_at) VALUES ('verified_reorged', $1, '{"note":"older"}', now() - interval '1 day')`,
      [r.id],
    );
    const all = await alerts('?limit=100');
    const times = all.body.alerts.map((a: { created_at: string }) => a.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(all.body.alerts.at(-1).details).toEqual({ note: 'older' });
    const first = await alerts('?limit=1');
    expect(first.body).toMatchObject({ ok: true, has_more: true, limit: 1, offset: 0 });
    expect(first.body.alerts[0].alert_id).toBe(all.body.alerts[0].alert_id);
    const second = await alerts('?limit=1&offset=1&kind=verified_reorged');
    expect(second.body.alerts[0].alert_id).toBe(all.body.alerts[1].alert_id);
  });

  it.each(['?limit=101', '?limit=0', '?limit=1e1', '?offset=-1', '?kind=other', '?request_id=nope', '?colour=red', '?open=yes', '?open=1', '?open='])(
    '%s → 400 invalid_request',
    async (query) => {
      const res = await alerts(query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ ok: false, error: 'invalid_request' });
    },
  );

  it('needs the admin token and the admin listener', async () => {
    expect((await call(svc.adminUrl, 'GET', '/admin/api/alerts')).status).toBe(401);
    expect((await call(svc.adminUrl, 'GET', '/admin/api/alerts', { key: 'wrong-token-0123456789' })).status).toBe(401);
    expect((await call(svc.publicUrl, 'GET', '/admin/api/alerts', { key: ADMIN_TOKEN })).status).toBe(404);
  });
});

describe('a batch payment re-included at other log indexes', () => {
  const logIndexes = async (txHash: string) =>
    (await rpc<{ logs: Array<{ logIndex: string }> }>(node.url, 'eth_getTransactionReceipt', [txHash])).logs.map((l) => Number(l.logIndex));
  const claimOf = async (id: string) => (await db.query<{ claimed_log_index: number; claim_settled_at: Date | null; claim_lost_at: Date | null }>(
    `SELECT claimed_log_index, claim_settled_at, claim_lost_at FROM payment_requests WHERE id = $1`, [id]))[0];

  /**
   * One transaction paying a and b (logs 0 and 1), verified; `meanwhile` runs with both verified (given the
   * block's time); then a reorg re-includes the same transaction behind another one's log, so its transfers are
   * logs 1 and 2, `laterBy` seconds after the first block when given.
   */
  async function batchReincludedShifted(
    a: { id: string; amount: bigint },
    b: { id: string; amount: bigint },
    meanwhile = async (_txHash: string, _blockTime: number) => {},
    laterBy?: number,
  ): Promise<string> {
    const batch = await deployContract(node.url, 'TestBatchTransfer.sol', 'TestBatchTransfer');
    await sendCall(node.url, token, new Interface(['function approve(address,uint256)']).encodeFunctionData('approve', [batch, MaxUint256]), PAYER);
    const snap = await snapshot(node.url);
    const pay = new Interface(['function transferEach(address token, address[] to, uint256[] value)'])
      .encodeFunctionData('transferEach', [token, [merchant.wallet.address, merchant.wallet.address], [a.amount, b.amount]]);
    const raw = await signed(PAYER, batch, pay, '1');
    const txHash = await broadcast(node.url, raw); // mined at once: 1 confirmation
    expect((await submit(a.id, txHash)).status).toBe(200);
    await mine(node.url, CONFIRMATIONS - 1);
    await waitFor(async () => (await get(a.id)).proof_status === 'verified' && (await get(b.id)).proof_status === 'verified', 15000);
    expect([(await claimOf(a.id)).claimed_log_index, (await claimOf(b.id)).claimed_log_index]).toEqual([0, 1]);
    const { blockNumber } = await rpc<{ blockNumber: string }>(node.url, 'eth_getTransactionReceipt', [txHash]);
    const { timestamp } = await rpc<{ timestamp: string }>(node.url, 'eth_getBlockByNumber', [blockNumber, false]);
    await meanwhile(txHash, Number(timestamp));

    await revert(node.url, snap);
    if (laterBy !== undefined) await rpc(node.url, 'evm_setNextBlockTimestamp', [Number(timestamp) + laterBy]);
    await reincludeBehindAnotherLog(raw);
    expect(await logIndexes(txHash)).toEqual([1, 2]);
    return txHash;
  }

  it('moves both claims together and settles them; the mode\'s other claims are still re-read (a reviewer\'s probe: the first claim\'s move hit the second\'s index and failed every later run)', async () => {
    const [a, b] = [await newRequest(), await newRequest()];
    const before = await reorgedMetric();
    await batchReincludedShifted(a, b);
    // And an ordinary payment of the same mode afterwards.
    const c = await newRequest();
    await payAndVerify(c);
    await mine(node.url, CONFIRMATIONS * 2);

    await waitFor(async () => (await Promise.all([a, b, c].map(async (r) => (await claimOf(r.id)).claim_settled_at !== null))).every(Boolean), 15000);
    expect([(await claimOf(a.id)).claimed_log_index, (await claimOf(b.id)).claimed_log_index]).toEqual([1, 2]);
    expect((await claimOf(a.id)).claim_lost_at).toBeNull();
    expect((await alerts(`?request_id=${a.id}`)).body.alerts).toEqual([]);
    expect(await reorgedMetric()).toBe(before);
  });

  it('claims that cannot follow (a settled claim holds the index one needs) raise one claim_unmovable alert each, stay verified, and the mode\'s other claims still settle', async () => {
    const [a, b] = [await newRequest(), await newRequest()];
    const unmovable = async () => metric(/^prs_claims_unmovable_total\{mode="test"\} (\d+)$/m);
    const before = await unmovable();
    const holder = await newRequest();
    await batchReincludedShifted(a, b, async (txHash) => {
      // A settled claim of the same transaction at log 2 (as a claim settled before a reorg deeper than the
      // settle depth would be): the index b's move needs.
      await db.query(
        `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, claimed_log_index = 2, claimed_block_number = 1,
                claimed_block_hash = $3, proof_verified_at = now(), claim_settled_at = now() WHERE id = $1`,
        [holder.id, txHash, `0x${'00'.repeat(32)}`],
      );
    });
    const c = await newRequest();
    await payAndVerify(c);
    await mine(node.url, CONFIRMATIONS * 2);

    await waitFor(async () => (await claimOf(c.id)).claim_settled_at !== null, 15000);
    const listed = await waitFor(async () => {
      const res = await alerts('?kind=claim_unmovable');
      const ours = res.body.alerts.filter((x: { request_id: string }) => x.request_id === a.id || x.request_id === b.id);
      return ours.length === 2 ? ours : null;
    }, 15000);
    expect(listed.find((x: { request_id: string }) => x.request_id === b.id)).toMatchObject({
      kind: 'claim_unmovable',
      details: { mode: 'test', log_index: 1, moved_to: { log_index: 2 }, partner_id: partner.id, merchant_id: merchant.id, amount: b.amount.toString() },
    });
    expect(await unmovable()).toBe(before + 2);
    // Read again on later runs (one has run once a payment verified after now is settled): no second alert,
    // and nothing changed on the requests.
    const d = await newRequest();
    await payAndVerify(d);
    await mine(node.url, CONFIRMATIONS * 2);
    await waitFor(async () => (await claimOf(d.id)).claim_settled_at !== null, 15000);
    expect(await unmovable()).toBe(before + 2);
    for (const r of [a, b]) {
      expect((await get(r.id)).proof_status).toBe('verified');
      expect(await claimOf(r.id)).toMatchObject({ claim_settled_at: null, claim_lost_at: null });
      expect((await alerts(`?request_id=${r.id}`)).body.alerts).toHaveLength(1);
    }
    expect([(await claimOf(a.id)).claimed_log_index, (await claimOf(b.id)).claimed_log_index]).toEqual([0, 1]);
    const open = async () => (await alerts('?kind=claim_unmovable&open=true')).body.alerts.map((x: { request_id: string }) => x.request_id);
    expect(await open()).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(listed.map((x: { resolved_at: string | null }) => x.resolved_at)).toEqual([null, null]);

    // The cause clears (the holder's claim is elsewhere now): the claims move, settle, and their alerts are resolved.
    await db.query(`UPDATE payment_requests SET claimed_log_index = 9 WHERE id = $1`, [holder.id]);
    await mine(node.url, 1);
    await waitFor(async () => (await claimOf(a.id)).claim_settled_at !== null && (await claimOf(b.id)).claim_settled_at !== null, 15000);
    expect([(await claimOf(a.id)).claimed_log_index, (await claimOf(b.id)).claimed_log_index]).toEqual([1, 2]);
    // Resolved by the run after the one that settled them.
    for (const r of [a, b]) {
      const alert = await waitFor(async () => {
        const [x] = (await alerts(`?request_id=${r.id}`)).body.alerts;
        return x?.resolved_at ? x : null;
      }, 15000);
      expect(Date.parse(alert.resolved_at)).toBeGreaterThanOrEqual(Date.parse(alert.created_at));
    }
    expect(await open()).not.toEqual(expect.arrayContaining([a.id]));
    expect(await open()).not.toEqual(expect.arrayContaining([b.id]));
    const resolved = (await alerts('?kind=claim_unmovable&open=false')).body.alerts.map((x: { request_id: string }) => x.request_id);
    expect(resolved).toEqual(expect.arrayContaining([a.id, b.id]));
    // A claim stuck again after that is a new alert: one open per request and kind.
    const again = await svc.app.get(DataSource).transaction((em) =>
      svc.app.get(AlertsService).record(em, { kind: 'claim_unmovable', requestId: a.id, details: { probe: true } }));
    expect(again).toMatchObject({ kind: 'claim_unmovable', requestId: a.id, resolvedAt: null });
    expect((await alerts(`?request_id=${a.id}`)).body.alerts).toHaveLength(2);
  });

  it('a batch whose move is blocked, one claim re-included outside its window: that one is lost at the settle depth and lets go of its index, the other waits with its claim_unmovable alert, then settles once the index is free', async () => {
    const [a, b, holder] = [await newRequest(), await newRequest(), await newRequest()];
    await batchReincludedShifted(a, b, async (txHash, blockTime) => {
      // a's window ends a second after the payment's block (re-included 30 s later); b's does not.
      await db.query(
        `UPDATE payment_requests SET claim_until = to_timestamp($2), expires_at = to_timestamp($2) - interval '60 minutes' WHERE id = $1`,
        [a.id, blockTime + 1],
      );
      // A settled claim of the same transaction at log 2: the index b's move needs.
      await db.query(
        `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, claimed_log_index = 2, claimed_block_number = 1,
                claimed_block_hash = $3, proof_verified_at = now(), claim_settled_at = now() WHERE id = $1`,
        [holder.id, txHash, `0x${'00'.repeat(32)}`],
      );
    }, 30);
    await mine(node.url, CONFIRMATIONS * 2);

    const [lost] = await waitFor(async () => {
      const res = await alerts(`?request_id=${a.id}`);
      return res.body.alerts.length ? res.body.alerts : null;
    }, 15000);
    expect(lost).toMatchObject({ kind: 'verified_reorged', details: { reason: 'moved_outside_window', log_index: 0, moved_to: { log_index: 1 } } });
    const [stuck] = await waitFor(async () => {
      const res = await alerts(`?request_id=${b.id}`);
      return res.body.alerts.length ? res.body.alerts : null;
    }, 15000);
    expect(stuck).toMatchObject({ kind: 'claim_unmovable', resolved_at: null, details: { log_index: 1, moved_to: { log_index: 2 } } });
    const lostClaim = await claimOf(a.id);
    expect(lostClaim).toMatchObject({ claimed_log_index: null, claim_settled_at: null });
    expect(lostClaim.claim_lost_at).not.toBeNull();
    expect(await claimOf(b.id)).toMatchObject({ claimed_log_index: 1, claim_settled_at: null, claim_lost_at: null });
    for (const r of [a, b]) expect((await get(r.id)).proof_status).toBe('verified');

    // The holder's claim is elsewhere now: b moves, settles, and its alert is resolved; a stays lost, alone.
    await db.query(`UPDATE payment_requests SET claimed_log_index = 9 WHERE id = $1`, [holder.id]);
    await mine(node.url, 1);
    await waitFor(async () => (await claimOf(b.id)).claim_settled_at !== null, 15000);
    expect((await claimOf(b.id)).claimed_log_index).toBe(2);
    await waitFor(async () => (await alerts(`?request_id=${b.id}`)).body.alerts[0]?.resolved_at ?? null, 15000);
    expect((await alerts(`?request_id=${a.id}`)).body.alerts).toHaveLength(1);
    expect(await claimOf(a.id)).toMatchObject({ claimed_log_index: null, claim_settled_at: null });
  });

  it('a sibling already verified where the transaction is now settles although the other claim cannot follow', async () => {
    const [a, b, holder] = [await newRequest(), await newRequest(), await newRequest()];
    const txHash = await batchReincludedShifted(a, b);
    // b as if verified after the reorg, at its new place (log 2); a still where it was first (log 0), and the
    // index its move needs (1) held by a settled claim.
    const { blockNumber, blockHash } = await rpc<{ blockNumber: string; blockHash: string }>(node.url, 'eth_getTransactionReceipt', [txHash]);
    await db.query(`UPDATE payment_requests SET claimed_log_index = 2, claimed_block_number = $2, claimed_block_hash = $3 WHERE id = $1`, [b.id, Number(blockNumber), blockHash.toLowerCase()]);
    await db.query(
      `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, claimed_log_index = 1, claimed_block_number = 1,
              claimed_block_hash = $3, proof_verified_at = now(), claim_settled_at = now() WHERE id = $1`,
      [holder.id, txHash, `0x${'00'.repeat(32)}`],
    );
    await mine(node.url, CONFIRMATIONS * 2);

    await waitFor(async () => (await claimOf(b.id)).claim_settled_at !== null, 15000);
    const [stuck] = await waitFor(async () => {
      const res = await alerts(`?request_id=${a.id}`);
      return res.body.alerts.length ? res.body.alerts : null;
    }, 15000);
    expect(stuck).toMatchObject({ kind: 'claim_unmovable', details: { log_index: 0, moved_to: { log_index: 1 } } });
    expect(await claimOf(a.id)).toMatchObject({ claimed_log_index: 0, claim_settled_at: null, claim_lost_at: null });
    expect((await alerts(`?request_id=${b.id}`)).body.alerts).toEqual([]);
    // Out of the way, so later tests' transactions never meet this one's stuck claim.
    await db.query(`UPDATE payment_requests SET claim_settled_at = now() WHERE id = $1`, [a.id]);
  });
});

describe('resolving claim_unmovable alerts', () => {
  it('reads the open alerts page by page: 1,001 stuck for good do not hold back one whose claim settled', async () => {
    const seed = await newRequest();
    // 1,001 requests cloned from one (no amount held, no claim), each with an open claim_unmovable alert;
    // the newest alert's claim settles.
    const ids = (await db.query<{ id: string }>(
      `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate, amount,
              chain_id, token_address, recipient, payment_mode, expires_at, claim_until, source, amount_locked)
       SELECT gen_random_uuid(), partner_id, merchant_id, test_mode, 'unmovable-' || g || '-' || md5(random()::text), fiat_amount,
              fiat_currency, rate, amount, chain_id, token_address, recipient, payment_mode, expires_at, claim_until, source, false
         FROM payment_requests, generate_series(1, 1001) g WHERE id = $1
       RETURNING id`, [seed.id])).map((r) => r.id);
    await db.query(
      `INSERT INTO alerts (kind, request_id, details, created_at)
       SELECT 'claim_unmovable', r, '{}', now() - (1002 - o) * interval '1 ms' FROM unnest($1::uuid[]) WITH ORDINALITY AS t(r, o)`,
      [ids],
    );
    const newest = ids[ids.length - 1];
    await db.query(`UPDATE payment_requests SET claim_settled_at = now() WHERE id = $1`, [newest]);
    try {
      const resolved = await waitFor(async () => {
        const [a] = await db.query<{ resolved_at: Date | null }>(`SELECT resolved_at FROM alerts WHERE request_id = $1`, [newest]);
        return a.resolved_at;
      }, 15000);
      expect(resolved).toBeInstanceOf(Date);
      expect((await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM alerts WHERE request_id = ANY($1::uuid[]) AND resolved_at IS NULL`, [ids]))[0].n).toBe(1000);
    } finally {
      // Out of the next tests' runs.
      await db.query(`UPDATE alerts SET resolved_at = now() WHERE request_id = ANY($1::uuid[]) AND resolved_at IS NULL`, [ids]);
    }
  });
});

describe('ClaimFinalityRepository.due', () => {
  it('pages in (block, unknown first; id) order: page after page is the whole list once', async () => {
    const repo = svc.app.get(ClaimFinalityRepository);
    // Live-mode claims (live is off in this service, so its finality job never reads them), blocks unknown,
    // shared and distinct.
    const ids: string[] = [];
    for (const block of [null, null, 7, 7, 7, 9, null, 12, null, 7]) {
      const r = await newRequest();
      await db.query(
        `UPDATE payment_requests SET test_mode = false, proof_status = 'verified', tx_hash = $2, claimed_log_index = 0,
                claimed_block_number = $3, claimed_block_hash = $4, proof_verified_at = now(), claim_settled_at = NULL WHERE id = $1`,
        [r.id, `0x${'cd'.repeat(28)}${r.id.slice(0, 8)}`, block, `0x${'00'.repeat(32)}`],
      );
      ids.push(r.id);
    }
    const chainId = BigInt((await db.query(`SELECT chain_id FROM payment_requests WHERE id = $1`, [ids[0]]))[0].chain_id);
    const whole = await repo.due(chainId, false, 100, 1000);
    expect(whole.map((c) => c.requestId).sort()).toEqual(expect.arrayContaining([...ids].sort()));
    // Page sizes whose pages end inside a run of equal blocks (unknown, and 7) as well as at its end.
    for (const size of [1, 2, 3, 4]) {
      const paged: string[] = [];
      let after: (typeof whole)[number] | undefined;
      for (;;) {
        const page = await repo.due(chainId, false, 100, size, after);
        paged.push(...page.map((c) => c.requestId));
        if (page.length < size) break;
        after = page[page.length - 1];
      }
      expect(paged).toEqual(whole.map((c) => c.requestId));
    }
    expect(whole.map((c) => c.blockNumber)).toEqual([...whole.map((c) => c.blockNumber)].sort((x, y) => (x ?? -1) - (y ?? -1)));
    await db.query(`UPDATE payment_requests SET claim_settled_at = now() WHERE id = ANY($1)`, [ids]);
  });
});

describe('ClaimFinalityRepository.moveTogether', () => {
  /** Far past this spec's chain head: the running finality job never takes these made-up claims for re-reading. */
  const FAR = 1_000_000_000;
  /** Two verified claims of one made-up transaction at logs 0 and 1, as the verification stores them. */
  async function claimsOfOneTransaction(): Promise<{ a: string; b: string; chainId: string }> {
    const [a, b] = [await newRequest(), await newRequest()];
    const tx = `0x${randomBytes(32).toString('hex')}`;
    for (const [id, log] of [[a.id, 0], [b.id, 1]] as const) {
      await db.query(
        `UPDATE payment_requests SET proof_status = 'verified', tx_hash = $2, claimed_log_index = $3, claimed_block_number = ${FAR},
                claimed_block_hash = $4, proof_verified_at = now(), claim_settled_at = NULL WHERE id = $1`,
        [id, tx, log, `0x${'00'.repeat(32)}`],
      );
    }
    return { a: a.id, b: b.id, chainId: (await db.query(`SELECT chain_id FROM payment_requests WHERE id = $1`, [a.id]))[0].chain_id };
  }
  const at = async (id: string) => (await db.query<{ claimed_log_index: number | null }>(`SELECT claimed_log_index FROM payment_requests WHERE id = $1`, [id]))[0].claimed_log_index;

  it('moves the claims of one transaction onto each other\'s indexes and answers the ids it moved; a lost sibling, released, lets go of its index', async () => {
    const repo = svc.app.get(ClaimFinalityRepository);
    const hash = `0x${'11'.repeat(32)}`;
    const { a, b } = await claimsOfOneTransaction();
    // Shifted by one: a onto b's index.
    const moved = await repo.moveTogether([{ id: a, blockNumber: FAR + 1, blockHash: hash, logIndex: 1 }, { id: b, blockNumber: FAR + 1, blockHash: hash, logIndex: 2 }]);
    expect(moved.sort()).toEqual([a, b].sort());
    expect([await at(a), await at(b)]).toEqual([1, 2]);

    // b vanished (its alert raised: lost) and a moves onto the index b held.
    const other = await claimsOfOneTransaction();
    await db.query(`UPDATE payment_requests SET claim_lost_at = now() WHERE id = $1`, [other.b]);
    await repo.releaseIndexes([other.b]);
    expect(await repo.moveTogether([{ id: other.a, blockNumber: FAR + 1, blockHash: hash, logIndex: 1 }])).toEqual([other.a]);
    expect([await at(other.a), await at(other.b)]).toEqual([1, null]);
    await db.query(`UPDATE payment_requests SET claim_settled_at = now() WHERE id = ANY($1) AND claim_lost_at IS NULL`, [[a, b, other.a]]);
  });
});
