import { Wallet } from 'ethers';
import {
  DEV_KEYS, deployToken, findFreePort, mine, mint, revert, rpc, snapshot, startLocalNode, transferToken, type LocalNode,
} from '../../scripts/chain/local-node';
import { ADMIN_TOKEN, startFinalityService, type TestService } from '../support/app';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { call } from '../support/http';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';

/**
 * An operator moves test mode from token A to token B on the same chain (config change and restart) while
 * requests priced in A are still open and a claim in A is verified but not settled. After the restart the
 * chain scan still finds a payment in A nobody submitted a hash for, and the finality re-read still re-reads
 * the claim in A (reorged away here: one alert).
 */
const CONFIRMATIONS = 2;
const PAYER = DEV_KEYS[1];
let node: LocalNode;
let tokenA: string;
let tokenB: string;
let svc: TestService | undefined;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };
/** Open in A, paid after the switch without a submitted hash. */
let openInA: { id: string; amount: bigint };
/** Open in A, its claim window closing after the switch. */
let closingInA: { id: string; amount: bigint };
/** Verified in A just before the switch (not yet settled), then reorged away. */
let verifiedInA: { id: string; amount: bigint; txHash: string };

const start = (token: string) => startFinalityService(node.url, token, CONFIRMATIONS, 150, { EXPIRY_SWEEP_INTERVAL_MS: '300' });

let fiat = 900;
async function newRequest(): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc!.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: (fiat += 13) },
  });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}

const row = async (id: string) =>
  (await sql<{
    token_address: string; proof_status: string; proof_source: string | null; amount_locked: boolean;
    claim_lost_at: Date | null; claim_settled_at: Date | null;
  }>(
    `SELECT token_address, proof_status, proof_source, amount_locked, claim_lost_at, claim_settled_at FROM payment_requests WHERE id = $1`,
    [id],
  ))[0];
const cursorOf = async (token: string) =>
  Number((await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE chain_id = 31337 AND token_address = $1`, [token]))[0]?.last_block ?? -1);

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  tokenA = await deployToken(node.url, { name: 'Old USD', symbol: 'OUSD', decimals: 6 });
  tokenB = await deployToken(node.url, { name: 'New USD', symbol: 'NUSD', decimals: 6 });
  await mint(node.url, tokenA, new Wallet(PAYER).address, 10n ** 15n);
  await mint(node.url, tokenB, new Wallet(PAYER).address, 10n ** 15n);
  // Other specs of the run left claims and open requests on other nodes with the same chain id (and, the
  // deployer's nonces being the same, the same token addresses): to this node they would look reorged away.
  await sql(`UPDATE payment_requests SET claim_settled_at = now() WHERE proof_status = 'verified' AND claim_settled_at IS NULL AND claim_lost_at IS NULL`);
  await sql(`UPDATE payment_requests SET amount_locked = false WHERE amount_locked`);

  svc = await start(tokenA);
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
  openInA = await newRequest();
  closingInA = await newRequest();
  const paidInA = await newRequest();
  expect((await row(openInA.id)).token_address).toBe(tokenA);

  const beforePayment = await snapshot(node.url);
  const tx = await transferToken(node.url, tokenA, PAYER, merchant.wallet.address, paidInA.amount);
  expect((await call(svc.publicUrl, 'POST', `/pay/api/${paidInA.id}/proof`, { body: { tx_hash: tx.txHash } })).status).toBe(200);
  await mine(node.url, CONFIRMATIONS - 1);
  await waitFor(async () => (await row(paidInA.id)).proof_status === 'verified');
  verifiedInA = { ...paidInA, txHash: tx.txHash };

  // The switch: test mode now prices in B. The claim in A is 2 deep, settled only at 4.
  await svc.close();
  svc = undefined;
  expect((await row(verifiedInA.id)).claim_settled_at).toBeNull();
  await revert(node.url, beforePayment); // drops the payment in A
  await mine(node.url, CONFIRMATIONS * 2 + 2);
  svc = await start(tokenB);
}, 90000);

afterAll(async () => {
  // This node goes away: later specs, on other nodes with the same chain id, must not re-read what it left.
  if (partner) {
    await sql(
      `UPDATE payment_requests SET claim_settled_at = now()
        WHERE partner_id = $1 AND proof_status = 'verified' AND claim_settled_at IS NULL AND claim_lost_at IS NULL`,
      [partner.id],
    );
    await sql(`UPDATE payment_requests SET amount_locked = false WHERE partner_id = $1 AND amount_locked`, [partner.id]);
  }
  await closeSql();
  await svc?.close();
  await node?.stop();
});

it('the scan still pays an open request of the old token that nobody submitted a hash for', async () => {
  // Control: the scan runs, and finds payments in the new token.
  const inB = await newRequest();
  expect((await row(inB.id)).token_address).toBe(tokenB);
  await transferToken(node.url, tokenB, PAYER, merchant.wallet.address, inB.amount);
  await transferToken(node.url, tokenA, PAYER, merchant.wallet.address, openInA.amount);
  await mine(node.url, CONFIRMATIONS);
  await waitFor(async () => (await row(inB.id)).proof_status === 'verified');
  const paid = await waitFor(async () => {
    const r = await row(openInA.id);
    return r.proof_status === 'verified' ? r : null;
  }, 10000);
  expect(paid!.proof_source).toBe('chain_scan');
});

it('the finality re-read still re-reads a claim of the old token, and alerts when it was reorged away', async () => {
  const listed = await waitFor(async () => {
    const res = await call(svc!.adminUrl, 'GET', `/admin/api/alerts?request_id=${verifiedInA.id}`, { key: ADMIN_TOKEN });
    return res.body.alerts.length ? res.body.alerts : null;
  }, 10000);
  expect(listed).toHaveLength(1);
  expect(listed[0]).toMatchObject({
    kind: 'verified_reorged',
    details: { mode: 'test', reason: 'receipt_missing', token_address: tokenA, tx_hash: verifiedInA.txHash },
  });
  expect((await row(verifiedInA.id)).claim_lost_at).not.toBeNull();
});

it("frees the old token's amounts once its scan passes their claim window, then reads the old token no more", async () => {
  // The windows of A's requests closed a minute ago by the database's clock (an amount is freed only once both
  // clocks are a minute past it); the next block is stamped 2 minutes on. The paid ones too: a verified
  // request holds its amount, and keeps its wallet watched, until its window has closed.
  const inA = [closingInA.id, openInA.id, verifiedInA.id];
  await sql(`UPDATE payment_requests SET expires_at = now() - interval '2 minutes', claim_until = now() - interval '61 seconds' WHERE id = ANY($1::uuid[])`, [inA]);
  await rpc(node.url, 'evm_increaseTime', [120]);
  await mine(node.url, CONFIRMATIONS);
  for (const id of inA) await waitFor(async () => !(await row(id)).amount_locked, 10000);

  // Nothing in A can be paid any more (the other request of A was paid by the first test): A drops out while
  // B's cursor goes on. B's cursor reaching a block mined after the release means a scan that started after it
  // has run (and any earlier one has ended).
  expect((await row(openInA.id)).proof_status).toBe('verified');
  const scannedPast = async (blocks: number) => {
    await mine(node.url, blocks);
    const tip = Number(await rpc<string>(node.url, 'eth_blockNumber'));
    await waitFor(async () => (await cursorOf(tokenB)) >= tip - CONFIRMATIONS + 1);
  };
  await scannedPast(1);
  const a = await cursorOf(tokenA);
  await scannedPast(3);
  expect(await cursorOf(tokenA)).toBe(a);
});

it('still retries an undecided transfer of the old token after the token dropped out of the scan', async () => {
  // As if the scan had held the transfer that paid openInA undecided (its receipt not yet on the backend),
  // and the payer's hash had verified the request meanwhile: nothing claimable is left in A, yet the row
  // must be retried, and goes since its transfer is the claimed one.
  const [claim] = await sql<{ tx_hash: string; claimed_log_index: number; claimed_block_number: string; claimed_block_hash: string; recipient: string; amount: string }>(
    `SELECT tx_hash, claimed_log_index, claimed_block_number, claimed_block_hash, recipient, amount FROM payment_requests WHERE id = $1`,
    [openInA.id],
  );
  await sql(
    `INSERT INTO unmatched_transfers (chain_id, tx_hash, log_index, block_number, block_hash, token_address, from_address, to_address,
                                      value, reason, pending_request_id)
     VALUES (31337, $1, $2, $3, $4, $5, $6, $7, $8, 'unconfirmed_not_mined', $9)`,
    [claim.tx_hash, claim.claimed_log_index, claim.claimed_block_number, claim.claimed_block_hash, tokenA,
      new Wallet(PAYER).address.toLowerCase(), claim.recipient, claim.amount, openInA.id],
  );
  await mine(node.url, 1);
  await waitFor(async () => {
    const [left] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM unmatched_transfers WHERE tx_hash = $1`, [claim.tx_hash]);
    return left.n === 0;
  }, 10000);
});
