import { AbiCoder, Interface, Wallet, concat, getAddress, zeroPadValue } from 'ethers';
import { loadArtifact } from '../../scripts/chain/compile-contracts';
import { deployContract } from '../../scripts/chain/local-node';
import { createShellMerchant, randomWallet, siweProof } from '../factories/merchants';
import { createPartner, tokenOf, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql } from '../support/db';
import { call } from '../support/http';
import { TcpProxy } from '../support/tcp-proxy';
import { testEnv } from '../support/test-env';

/**
 * Issue 11 item 1 and DESIGN §5 (last sentence of sign-in): the onboarding wallet step accepts a contract
 * wallet's signature, checked on the local chain: a deployed ERC-1271 wallet (as a Safe signs) and an
 * ERC-6492 wallet not deployed yet. A signature by anyone but the wallet's owner is refused and changes
 * nothing; a chain that cannot answer is 503 chain_unavailable, not a refusal.
 */
const env = testEnv();
const owner = randomWallet();
const factoryAbi = new Interface(loadArtifact('TestSmartWallet.sol', 'TestWalletFactory').abi);
let svc: TestService;
let p: TestPartner;
let smartWallet: string;
let factory: string;

const state = (token: string) => call(svc.publicUrl, 'GET', `/onboarding/api/${token}`);
const proveWallet = (s: TestService, token: string, body: unknown) => call(s.publicUrl, 'POST', `/onboarding/api/${token}/wallet`, { body });
const complete = (token: string) => call(svc.publicUrl, 'POST', `/onboarding/api/${token}/complete`, { body: { accept_terms: true } });

/** The counterfactual address of the factory's wallet for `owner` and `salt`. */
async function walletAt(salt: string): Promise<string> {
  const res = await fetch(env.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: factory, data: factoryAbi.encodeFunctionData('addressOf', [owner.address, salt]) }, 'latest'] }),
  });
  return getAddress(AbiCoder.defaultAbiCoder().decode(['address'], ((await res.json()) as { result: string }).result)[0] as string);
}

/** A shell merchant for `wallet` and its onboarding token. */
async function shellFor(wallet?: string): Promise<{ id: string; token: string }> {
  const m = await createShellMerchant(svc, p.testKey, wallet ? { wallet_address: wallet } : {});
  return { id: m.merchant_id, token: tokenOf(m.onboarding_url) };
}

beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  smartWallet = getAddress(await deployContract(env.rpcUrl, 'TestSmartWallet.sol', 'TestSmartWallet', [owner.address]));
  factory = await deployContract(env.rpcUrl, 'TestSmartWallet.sol', 'TestWalletFactory');
});

afterAll(async () => {
  await svc?.close();
  await closeSql();
});

it('a deployed ERC-1271 wallet signed by its owner onboards and can be paid', async () => {
  const { id, token } = await shellFor(smartWallet);
  const proved = await proveWallet(svc, token, await siweProof(svc, token, owner, { address: smartWallet }));
  expect(proved.status).toBe(200);
  expect(proved.body.wallet_address).toBe(smartWallet.toLowerCase());
  expect(proved.body.wallet_verified).toBe(true);
  const done = await complete(token);
  expect(done.status).toBe(200);
  expect(done.body.onboarding_status).toBe('complete');
  const request = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: id, fiat_amount_int: 1500 } });
  expect(request.status).toBe(201);
  const pay = await call(svc.publicUrl, 'GET', `/pay/api/${request.body.request_id}`);
  expect(pay.body.recipient).toBe(smartWallet.toLowerCase());
});

it('an ERC-6492 wallet not deployed yet onboards with its wrapped signature', async () => {
  const salt = zeroPadValue('0x21', 32);
  const wallet = await walletAt(salt);
  const { token } = await shellFor();
  const proof = await siweProof(svc, token, owner, { address: wallet });
  const signature = concat([
    AbiCoder.defaultAbiCoder().encode(['address', 'bytes', 'bytes'], [factory, factoryAbi.encodeFunctionData('deploy', [owner.address, salt]), proof.signature]),
    '0x' + '6492'.repeat(16),
  ]);
  const proved = await proveWallet(svc, token, { message: proof.message, signature });
  expect(proved.status).toBe(200);
  expect(proved.body.wallet_address).toBe(wallet.toLowerCase());
  expect((await complete(token)).status).toBe(200);
});

it('a contract wallet signed by someone other than its owner → 400 invalid_signature, nothing changes', async () => {
  const salt = zeroPadValue('0x22', 32);
  const counterfactual = await walletAt(salt);
  for (const wallet of [smartWallet, counterfactual]) {
    const { token } = await shellFor();
    const before = (await state(token)).body;
    const r = await proveWallet(svc, token, await siweProof(svc, token, randomWallet(), { address: wallet }));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ ok: false, error: 'invalid_signature', errors: [{ field: 'signature', message: expect.any(String) }] });
    const after = (await state(token)).body;
    expect(after.wallet_address).toBeNull();
    expect(after.nonce).toBe(before.nonce);
    expect((await complete(token)).body.error).toBe('wallet_required');
  }
});

describe('with the chain unreachable', () => {
  let proxy: TcpProxy;
  let cut: TestService;

  beforeAll(async () => {
    proxy = new TcpProxy(Number(new URL(env.rpcUrl).port));
    await proxy.start();
    cut = await startService({ env: { CHAIN_TEST_RPC_URL: proxy.url, CHAIN_LIVE_RPC_URL: proxy.url } });
  });
  afterAll(async () => {
    await cut?.close();
    await proxy?.stop();
  });

  it('a contract wallet signature is 503 chain_unavailable and changes nothing; a plain account still onboards', async () => {
    const m = await createShellMerchant(cut, p.testKey, {});
    const token = tokenOf(m.onboarding_url);
    const proof = await siweProof(cut, token, owner, { address: smartWallet });
    await proxy.cut();
    const r = await proveWallet(cut, token, proof);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ ok: false, error: 'chain_unavailable' });
    expect((await call(cut.publicUrl, 'GET', `/onboarding/api/${token}`)).body.wallet_address).toBeNull();
    // A plain account's signature needs no chain.
    const plain = randomWallet();
    const ok = await proveWallet(cut, token, await siweProof(cut, token, plain));
    expect(ok.status).toBe(200);
    expect(ok.body.wallet_address).toBe(plain.address.toLowerCase());
    await proxy.restore();
  });
});
