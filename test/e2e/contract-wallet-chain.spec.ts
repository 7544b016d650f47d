import { getAddress, Wallet } from 'ethers';
import { deployContract, deployToken, findFreePort, startLocalNode, type LocalNode } from '../../scripts/chain/local-node';
import { dashboardMessage, dashboardNonce, postSession } from '../factories/dashboard';
import { createShellMerchant, randomWallet, siweProof } from '../factories/merchants';
import { createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';

/*
 * Review finding 1 (DESIGN §5 "contract checks on the mode's chain"): the test mode runs on the run's node
 * (chain 31337), the live mode on a second real node (chain 31338). The same contract wallet, with the same
 * owner, is deployed at the same address on both, so a signature checks out on either chain: only the
 * merchant's mode decides which check counts. A plain account's signature works whatever chainId it names.
 */
const env = testEnv();
const LIVE_CHAIN_ID = 31338;
let other: LocalNode;
let svc: TestService;
let p: TestPartner;

/** TestSmartWallet(owner) at one address on both chains: a fresh deployer's first transaction on each. */
async function twinWallet(owner: Wallet): Promise<string> {
  const deployer = randomWallet();
  const fund = (url: string) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'hardhat_setBalance', params: [deployer.address, '0x56BC75E2D63100000'] }),
    });
  await Promise.all([fund(env.rpcUrl), fund(other.url)]);
  const [a, b] = await Promise.all(
    [env.rpcUrl, other.url].map((url) => deployContract(url, 'TestSmartWallet.sol', 'TestSmartWallet', [owner.address], deployer.privateKey)),
  );
  if (a !== b) throw new Error(`twin deploy landed at ${a} and ${b}`);
  return getAddress(a);
}

/** An onboarded merchant of `key`'s mode whose wallet is `wallet`, proved with a message naming `chainId`. */
async function onboard(key: string, wallet: string, owner: Wallet, chainId: number): Promise<string> {
  const shell = await createShellMerchant(svc, key, { wallet_address: wallet });
  const token = tokenOf(shell.onboarding_url);
  const proved = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, owner, { address: wallet, chainId }) });
  if (proved.status !== 200) throw new Error(`wallet step failed: ${proved.status} ${proved.text}`);
  const done = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });
  if (done.status !== 200) throw new Error(`onboarding failed: ${done.status} ${done.text}`);
  return shell.merchant_id as string;
}

async function signIn(address: string, signer: Wallet, chainId: number) {
  const message = dashboardMessage(svc, address, await dashboardNonce(svc), { chainId });
  return postSession(svc, { message, signature: await signer.signMessage(message) });
}

beforeAll(async () => {
  other = await startLocalNode({ port: await findFreePort(), chainId: LIVE_CHAIN_ID });
  const liveToken = await deployToken(other.url, { name: 'Live USD', symbol: 'LUSD', decimals: 6 });
  svc = await startService({
    env: { CHAIN_LIVE_RPC_URL: other.url, CHAIN_LIVE_CHAIN_ID: String(LIVE_CHAIN_ID), CHAIN_LIVE_TOKEN_ADDRESS: liveToken },
  });
  p = await createPartner(svc);
}, 60_000);

afterAll(async () => {
  await svc?.close();
  await other?.stop();
  await closeSql();
});

describe('dashboard sign-in', () => {
  it('a test-mode contract wallet signs in on the test chain; the same signature checked on the live chain is 401', async () => {
    const owner = randomWallet();
    const wallet = await twinWallet(owner);
    const merchantId = await onboard(p.testKey, wallet, owner, 31337);

    const elsewhere = await signIn(wallet, owner, LIVE_CHAIN_ID);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(elsewhere.headers.getSetCookie()).toEqual([]);

    const home = await signIn(wallet, owner, 31337);
    expect(home.status).toBe(200);
    expect(home.body.merchant_id).toBe(merchantId);
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM dashboard_sessions WHERE merchant_id = $1`, [merchantId]);
    expect(n).toBe(1);
  });

  it('a live-mode contract wallet signs in on the live chain only', async () => {
    const owner = randomWallet();
    const wallet = await twinWallet(owner);
    const merchantId = await onboard(p.liveKey, wallet, owner, LIVE_CHAIN_ID);
    expect((await signIn(wallet, owner, 31337)).status).toBe(401);
    const home = await signIn(wallet, owner, LIVE_CHAIN_ID);
    expect(home.status).toBe(200);
    expect(home.body.merchant_id).toBe(merchantId);
  });

  it('a bad signature is still 401 before anything about the merchant, and a plain account names any chain', async () => {
    const owner = randomWallet();
    const wallet = await twinWallet(owner);
    await onboard(p.testKey, wallet, owner, 31337);
    expect((await signIn(wallet, randomWallet(), 31337)).status).toBe(401);

    const plain = randomWallet();
    const shell = await createShellMerchant(svc, p.testKey, { wallet_address: plain.address });
    const token = tokenOf(shell.onboarding_url);
    expect((await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, plain, { chainId: LIVE_CHAIN_ID }) })).status).toBe(200);
    expect((await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } })).status).toBe(200);
    expect((await signIn(plain.address, plain, LIVE_CHAIN_ID)).status).toBe(200);
  });
});

describe('onboarding wallet step', () => {
  it('a contract signature checked on another mode\'s chain is 400 invalid_signature and changes nothing', async () => {
    const owner = randomWallet();
    const wallet = await twinWallet(owner);
    const shell = await createShellMerchant(svc, p.testKey, { wallet_address: wallet });
    const token = tokenOf(shell.onboarding_url);
    const r = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, owner, { address: wallet, chainId: LIVE_CHAIN_ID }) });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_signature' });
    const [row] = await sql(`SELECT wallet_verified_at FROM merchants WHERE id = $1`, [shell.merchant_id]);
    expect(row.wallet_verified_at).toBeNull();

    const ok = await call(svc.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body: await siweProof(svc, token, owner, { address: wallet, chainId: 31337 }) });
    expect(ok.status).toBe(200);
    expect(ok.body.wallet_verified).toBe(true);
  });
});
