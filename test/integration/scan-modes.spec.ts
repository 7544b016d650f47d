import { Wallet } from 'ethers';
import { DEV_KEYS, deployToken, mine, mint, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { type TestService } from '../support/app';
import { sql } from '../support/db';
import { call } from '../support/http';
import { LaggingRpc, startLaggingChain, startScanningService, stopScanning } from '../support/lagging-rpc';
import { waitFor } from '../support/wait';

/**
 * The chain scan of one mode failing must not stop the other's: test mode reads its chain through an
 * endpoint that answers every eth_blockNumber with an error, live mode reads the node directly (another
 * token, so another cursor). A live payment is still found by the scan.
 */
const PAYER = DEV_KEYS[1];
let node: LocalNode;
let rpc: LaggingRpc;
let svc: TestService;
let partner: TestPartner;
let liveToken: string;

beforeAll(async () => {
  let testToken: string;
  ({ node, token: testToken, rpc } = await startLaggingChain(PAYER));
  liveToken = await deployToken(node.url, { name: 'Live USD', symbol: 'LUSD', decimals: 6 });
  await mint(node.url, liveToken, new Wallet(PAYER).address, 10n ** 15n);
  svc = await startScanningService(rpc, testToken, {
    CHAIN_LIVE_RPC_URL: node.url,
    CHAIN_LIVE_TOKEN_ADDRESS: liveToken,
    CHAIN_LIVE_CONFIRMATIONS: '1',
  });
  partner = await createPartner(svc);
}, 60000);

afterAll(() => stopScanning(svc, rpc, node));

it('a failing test-mode scan does not keep the live-mode scan from paying', async () => {
  const merchant = await createOnboardedMerchant(svc, partner.liveKey);
  const created = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.liveKey,
    body: { account_id: merchant.id, fiat_amount_int: 700 },
  });
  expect(created.status).toBe(201);
  rpc.failMethod('eth_blockNumber'); // every test-mode scan fails from now on
  await transferToken(node.url, liveToken, PAYER, merchant.wallet.address, BigInt(created.body.amount));
  await mine(node.url, 1);
  const paid = await waitFor(async () => {
    const [r] = await sql<{ proof_status: string; proof_source: string | null }>(
      `SELECT proof_status, proof_source FROM payment_requests WHERE id = $1`, [created.body.request_id]);
    return r.proof_status === 'verified' ? r : null;
  });
  expect(paid!.proof_source).toBe('chain_scan');
});
