import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import Redis from 'ioredis';
import { DEV_KEYS, mine, mint, rpc, sendTokenTransfer, withPending } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { RedisServer } from '../support/redis-server';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * A verification job queued again after Redis lost the first (ScheduledProcessor.redriveVerifications) waits
 * for an unknown hash from the row's latest change, at or after the hash's attachment, not from its own first
 * look: the transaction_not_found note comes when the lost job's would have, not a whole
 * VERIFY_NOT_FOUND_GIVE_UP_MS after the loss. Here the hash was attached (by the row's clock) longer ago than
 * the give-up: the re-queued job notes it at its first look, well inside a give-up it would otherwise wait out.
 */
const GIVE_UP_MS = 120_000;
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
      REDIS_PREFIX: `${env.redisPrefix}-requeue-${randomBytes(3).toString('hex')}`,
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
  await closeSql();
  await svc?.close();
  cli?.disconnect();
  await redis?.down();
});

it('Redis lost the job of a hash attached longer ago than the give-up → the re-queued job notes transaction_not_found at once', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 4100 + Math.floor(Math.random() * 500) } });
  expect(r.status).toBe(201);
  const id = r.body.request_id as string;
  await withPending(env.rpcUrl, async () => {
    const h = (await sendTokenTransfer(env.rpcUrl, env.token, PAYER, m.wallet.address, BigInt(r.body.amount))).toLowerCase();
    const sub = await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: h } });
    expect(sub.body.proof_status).toBe('attached');
    await rpc(env.rpcUrl, 'hardhat_dropTransaction', [h]);
  });
  // The first job is looking for the hash (unknown to the node) and backing off.
  await waitFor(async () => (await cli.keys('*verify-*')).length > 0, 10_000);
  // By the row's clock the hash was attached longer ago than the give-up (as after a long Redis outage).
  await sql(`UPDATE payment_requests SET updated_at = now() - $2::int * interval '1 millisecond' WHERE id = $1`, [id, GIVE_UP_MS + 1000]);
  await cli.flushall();
  const noted = await waitFor(async () => {
    await mine(env.rpcUrl, 1);
    const v = (await call(svc.publicUrl, 'GET', `/pay/api/${id}`)).body;
    return v.proof_note === 'transaction_not_found' ? v : null;
  }, 30_000, 300);
  expect(noted.proof_status).toBe('attached');
}, 90_000);
