import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import Redis from 'ioredis';
import { DEV_KEYS, mine, mint, rpc, sendTokenTransfer, transferToken, withPending } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { RedisServer } from '../support/redis-server';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * (A Redis hunt.) A payer submits the hash of a pending transaction (accepted: DESIGN §7); the wallet's transaction is then
 * dropped from the mempool. The verification job looks for it and, after VERIFY_NOT_FOUND_GIVE_UP_MS, notes
 * transaction_not_found: the pay page asks for the right hash and a new hash may replace it (proofReplaceable).
 * That whole back-off lives only in the BullMQ job. Redis loses it (FLUSHALL): nothing ever looks again, the
 * note never comes, and the payer's real payment hash is refused 409 proof_already_attached until the claim
 * window closes.
 */
const GIVE_UP_MS = 3000;
let redis: RedisServer;
let svc: TestService;
let cli: Redis;
const env = testEnv();
const PAYER = DEV_KEYS[1];

beforeAll(async () => {
  redis = await RedisServer.start();
  cli = new Redis(redis.url);
  svc = await startService({
    worker: true,
    env: {
      REDIS_URL: redis.url,
      REDIS_PREFIX: `${env.redisPrefix}-flushgu-${randomBytes(3).toString('hex')}`,
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '200',
      VERIFY_NOT_FOUND_BACKOFF_MS: '200',
      VERIFY_NOT_FOUND_GIVE_UP_MS: String(GIVE_UP_MS),
      CHAIN_SCAN_INTERVAL_MS: '500',
    },
  });
  await mint(env.rpcUrl, env.token, new Wallet(PAYER).address, 10n ** 15n);
});
afterAll(async () => {
  await svc?.close();
  cli?.disconnect();
  await redis?.down();
});

async function attachDroppedHash(): Promise<{ id: string; hash: string; key: string; amount: bigint; wallet: string }> {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 3100 + Math.floor(Math.random() * 500) } });
  expect(r.status).toBe(201);
  const hash = await withPending(env.rpcUrl, async () => {
    const h = (await sendTokenTransfer(env.rpcUrl, env.token, PAYER, m.wallet.address, BigInt(r.body.amount))).toLowerCase();
    const sub = await call(svc.publicUrl, 'POST', `/pay/api/${r.body.request_id}/proof`, { body: { tx_hash: h } });
    expect(sub.body.proof_status).toBe('attached');
    await rpc(env.rpcUrl, 'hardhat_dropTransaction', [h]);
    return h;
  });
  return { id: r.body.request_id, hash, key: p.testKey, amount: BigInt(r.body.amount), wallet: m.wallet.address };
}

const note = async (id: string) => (await call(svc.publicUrl, 'GET', `/pay/api/${id}`)).body.proof_note;

it('Redis losing its data while a job backs off: the verification is queued again, the hash given up on, and the real payment accepted', async () => {
  const r = await attachDroppedHash();
  await cli.flushall();
  await waitFor(async () => {
    await mine(env.rpcUrl, 1);
    return (await note(r.id)) === 'transaction_not_found';
  }, GIVE_UP_MS + 20_000, 300);
  // The payer pays again and submits that hash, as the page asks once the note is there.
  const paid = await transferToken(env.rpcUrl, env.token, PAYER, r.wallet, r.amount);
  const sub = await call(svc.publicUrl, 'POST', `/pay/api/${r.id}/proof`, { body: { tx_hash: paid.txHash } });
  expect([sub.status, sub.body.proof_status]).toEqual([200, 'attached']);
  const verified = await waitFor(async () => {
    const v = (await call(svc.publicUrl, 'GET', `/pay/api/${r.id}`)).body;
    return v.proof_status === 'verified' ? v : null;
  }, 20_000, 300);
  expect(verified.tx_hash).toBe(paid.txHash.toLowerCase());
}, 90_000);
