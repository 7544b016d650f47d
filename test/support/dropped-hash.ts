import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import Redis from 'ioredis';
import { DEV_KEYS, mint, rpc, sendTokenTransfer, withPending } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from './app';
import { call } from './http';
import { RedisServer } from './redis-server';
import { testEnv } from './test-env';

/** The payer of droppedHash's transfers (minted tokens by startWithOwnRedis). */
export const PAYER = DEV_KEYS[1];

/**
 * A service with a worker on a Redis of its own (which a test may FLUSHALL), the local test chain only, fast
 * verification polling and the given VERIFY_NOT_FOUND_GIVE_UP_MS; `cli` talks to that Redis.
 */
export async function startWithOwnRedis(giveUpMs: number): Promise<{ svc: TestService; cli: Redis; close(): Promise<void> }> {
  const redis = await RedisServer.start();
  const cli = new Redis(redis.url);
  const svc = await startService({
    worker: true,
    env: {
      REDIS_URL: redis.url,
      REDIS_PREFIX: `${testEnv().redisPrefix}-own-${randomBytes(3).toString('hex')}`,
      CHAIN_LIVE_RPC_URL: '',
      VERIFY_POLL_MS: '200',
      VERIFY_NOT_FOUND_BACKOFF_MS: '200',
      VERIFY_NOT_FOUND_GIVE_UP_MS: String(giveUpMs),
      CHAIN_SCAN_INTERVAL_MS: '500',
    },
  });
  await mint(testEnv().rpcUrl, testEnv().token, new Wallet(PAYER).address, 10n ** 15n);
  return {
    svc,
    cli,
    async close() {
      await svc.close();
      cli.disconnect();
      await redis.down();
    },
  };
}

/**
 * A new request whose payer submitted the hash of a pending transfer (accepted: DESIGN §7) that the wallet's
 * node then dropped from its mempool: the hash stays attached and unknown to the chain.
 */
export async function attachDroppedHash(svc: TestService): Promise<{ id: string; hash: string; key: string; amount: bigint; wallet: string }> {
  const env = testEnv();
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 3100 + Math.floor(Math.random() * 2000) } });
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
