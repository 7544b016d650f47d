import { Wallet } from 'ethers';
import { DEV_KEYS, mine, rpc as nodeRpc, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { type TestService } from '../support/app';
import { sql } from '../support/db';
import { call } from '../support/http';
import { LaggingRpc, startLaggingChain, startScanningService, stopScanning } from '../support/lagging-rpc';
import { waitFor } from '../support/wait';

/**
 * The chain scan behind a round-robin RPC whose eth_getLogs reaches a backend behind the one that answered
 * the tip: that backend answers a range with the logs up to its own head, without an error. The scan must not
 * move its cursor over blocks it did not prove it read, or a payment nobody submitted a hash for is never found.
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
  ({ node, token, rpc } = await startLaggingChain(PAYER));
  svc = await startScanningService(rpc, token, { CHAIN_TEST_CONFIRMATIONS: String(CONFIRMATIONS), CHAIN_LIVE_RPC_URL: '' });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
}, 60000);

afterAll(() => stopScanning(svc, rpc, node));

const cursor = async (): Promise<number> => {
  const [row] = await sql<{ last_block: string }>(`SELECT last_block FROM chain_cursors WHERE token_address = $1`, [token.toLowerCase()]);
  return row ? Number(row.last_block) : -1;
};
const tipOfNode = async () => Number(await nodeRpc<string>(node.url, 'eth_blockNumber'));
const stored = async (id: string) =>
  (await sql<{ proof_status: string; tx_hash: string | null; proof_source: string | null }>(
    `SELECT proof_status, tx_hash, proof_source FROM payment_requests WHERE id = $1`, [id]))[0];

it('does not move the cursor past a payment that eth_getLogs answered from a backend behind, and finds it once in step', async () => {
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: 777 },
  });
  expect(r.status).toBe(201);
  // The scan is in step with the chain before the backends part.
  const start = await tipOfNode();
  await waitFor(async () => (await cursor()) >= start - CONFIRMATIONS + 1);

  rpc.lagLogs(6);
  const tx = await transferToken(node.url, token, PAYER, merchant.wallet.address, BigInt(r.body.amount));
  await mine(node.url, CONFIRMATIONS - 1); // the payment is exactly CONFIRMATIONS deep: in the scan's next range
  // Scans ran while eth_getLogs lagged, each over a block more (the payment stays above the lagging head).
  for (let i = 0; i < 3; i++) {
    const answered = rpc.logsAnsweredBehind;
    await mine(node.url, 1);
    await waitFor(async () => rpc.logsAnsweredBehind > answered);
  }
  expect(await cursor()).toBeLessThan(tx.blockNumber);
  expect((await stored(r.body.request_id)).proof_status).toBe('none');

  rpc.catchUp();
  await mine(node.url, 1);
  const verified = await waitFor(async () => {
    const b = await stored(r.body.request_id);
    return b.proof_status === 'verified' ? b : null;
  });
  expect(verified).toMatchObject({ tx_hash: tx.txHash, proof_source: 'chain_scan' });
});
