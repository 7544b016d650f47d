import { Wallet } from 'ethers';
import { DEV_KEYS, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { ADMIN_TOKEN, startFinalityService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { startTwoChains } from '../support/two-chains';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

/**
 * The node behind a mode's RPC URL changes chain while the service runs (a node restarted on another chain id,
 * a URL re-pointed at another network): the chain id was checked at start only, so the service went on reading
 * the other chain as the configured one, where the same token address, the merchant's wallet and the amount
 * can all exist. Two real nodes, 31337 (configured) and 31338, the token deployed at the same address on both;
 * the test mode's RPC URL is a proxy moved from one to the other.
 */
const PAYER = DEV_KEYS[1];
let a: LocalNode;
let b: LocalNode;
let proxy: TcpProxy;
let token: string;
let svc: TestService;
let partner: TestPartner;
let merchant: { id: string; wallet: Wallet };

/** The test mode's RPC URL (the proxy's port) now reaches `node`. */
async function pointAt(node: LocalNode): Promise<void> {
  const port = proxy.port;
  await proxy.cut();
  proxy = new TcpProxy(Number(new URL(node.url).port));
  await proxy.start(port);
}

async function stored(id: string): Promise<{ proof_status: string; tx_hash: string | null }> {
  const [row] = await sql(`SELECT proof_status, tx_hash FROM payment_requests WHERE id = $1`, [id]);
  return row;
}

async function newRequest(fiat: number): Promise<{ id: string; amount: bigint }> {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: fiat } });
  expect(r.status).toBe(201);
  return { id: r.body.request_id, amount: BigInt(r.body.amount) };
}

beforeAll(async () => {
  ({ a, b, token } = await startTwoChains(PAYER));
  proxy = new TcpProxy(Number(new URL(a.url).port));
  await proxy.start();
  svc = await startFinalityService(proxy.url, token, 1, 300, { RATE_LIMIT_SCALE: '100' });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 90000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
  await proxy?.stop();
  await a?.stop();
  await b?.stop();
});

it('transfers on the chain the RPC URL reaches after a switch verify nothing; back on the configured chain, payments verify', async () => {
  const submitted = await newRequest(321);
  const scanned = await newRequest(322);

  await pointAt(b);
  const onB = await transferToken(b.url, token, PAYER, merchant.wallet.address, submitted.amount);
  await transferToken(b.url, token, PAYER, merchant.wallet.address, scanned.amount);
  // The payer's hash: the request's chain cannot be read now, nothing changes.
  const proof = await call(svc.publicUrl, 'POST', `/pay/api/${submitted.id}/proof`, { body: { tx_hash: onB.txHash } });
  expect(proof.body).toEqual({ ok: false, error: 'chain_unavailable' });
  expect(proof.status).toBe(503);
  // The mode is off (as with a wrong chain id at start), unless something verified first.
  const seen = await waitFor(async () => {
    const states = await Promise.all([stored(submitted.id), stored(scanned.id)]);
    if (states.some((s) => s.proof_status === 'verified')) return { verified: states };
    const c = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: partner.testKey, body: { account_id: merchant.id, fiat_amount_int: 5 } });
    return c.status === 503 ? { off: c.body.error } : null;
  }, 30000);
  expect(seen).toEqual({ off: 'asset_unavailable' });
  const ready = await call(svc.adminUrl, 'GET', '/health/ready', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(ready.status).toBe(503);
  expect(JSON.stringify(ready.body)).toContain('chain id 31338');
  expect((await stored(submitted.id)).proof_status).toBe('none');
  expect((await stored(scanned.id)).proof_status).toBe('none');

  // Back on the configured chain: the mode comes back on by itself, and the real payments verify.
  await pointAt(a);
  await waitFor(async () => (await call(svc.adminUrl, 'GET', '/health/ready')).status === 200, 30000);
  const onA = await transferToken(a.url, token, PAYER, merchant.wallet.address, submitted.amount);
  const scannedOnA = await transferToken(a.url, token, PAYER, merchant.wallet.address, scanned.amount);
  expect((await call(svc.publicUrl, 'POST', `/pay/api/${submitted.id}/proof`, { body: { tx_hash: onA.txHash } })).status).toBe(200);
  const paid = await waitFor(async () => {
    const states = await Promise.all([stored(submitted.id), stored(scanned.id)]);
    return states.every((s) => s.proof_status === 'verified') ? states : null;
  }, 30000);
  expect(paid!.map((s) => s.tx_hash)).toEqual([onA.txHash, scannedOnA.txHash]);
});
