import type Redis from 'ioredis';
import { mine, rpc, sendTokenTransfer, withPending } from '../../scripts/chain/local-node';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import type { TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { attachDroppedHash, PAYER, startWithOwnRedis } from '../support/dropped-hash';
import { call } from '../support/http';
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
let svc: TestService;
let cli: Redis;
let close: () => Promise<void>;
const env = testEnv();

beforeAll(async () => {
  ({ svc, cli, close } = await startWithOwnRedis(GIVE_UP_MS));
});
afterAll(async () => {
  await closeSql();
  await close?.();
});

it('Redis lost the job of a hash attached longer ago than the give-up → the re-queued job notes transaction_not_found at once', async () => {
  const { id } = await attachDroppedHash(svc);
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

/*
 * The attachment's clock stands only for the lost job's look for a hash never seen. A re-queued job that then
 * finds the transaction (pending here) and later loses it again (dropped from the mempool, or its block
 * reorged away) waits a whole give-up from that moment, as any job that saw it: the attachment, older than the
 * give-up, must not make it note transaction_not_found at its first unknown look.
 */
it('a re-queued job that saw the transaction pending, then lost it, waits a whole give-up from then, not from the attachment', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 5200 + Math.floor(Math.random() * 2000) } });
  expect(r.status).toBe(201);
  const id = r.body.request_id as string;
  const jobData = async () => {
    for (const k of await cli.keys(`*verify-${id}-*`)) {
      if ((await cli.type(k)) === 'hash') return (await cli.hget(k, 'data')) ?? '';
    }
    return '';
  };
  await withPending(env.rpcUrl, async () => {
    const h = (await sendTokenTransfer(env.rpcUrl, env.token, PAYER, m.wallet.address, BigInt(r.body.amount))).toLowerCase();
    expect((await call(svc.publicUrl, 'POST', `/pay/api/${id}/proof`, { body: { tx_hash: h } })).body.proof_status).toBe('attached');
    await waitFor(async () => (await jobData()).includes('"block"'), 10_000);
    // By the row's clock the hash was attached longer ago than the give-up; Redis then loses the job.
    await sql(`UPDATE payment_requests SET updated_at = now() - $2::int * interval '1 millisecond' WHERE id = $1`, [id, GIVE_UP_MS + 1000]);
    await cli.flushall();
    // The re-queued job finds the transaction pending and waits for a block.
    await waitFor(async () => (await jobData()).includes('"block"'), 30_000, 200);
    // The wallet's node drops it, and a block comes: the job's next look finds the hash unknown.
    await rpc(env.rpcUrl, 'hardhat_dropTransaction', [h]);
    await mine(env.rpcUrl, 1);
    // It either backs off (right) or gives up at once (the attachment's clock).
    await waitFor(async () => (await jobData()).includes('"backoff"') || (await call(svc.publicUrl, 'GET', `/pay/api/${id}`)).body.proof_note, 10_000, 100);
  });
  // Backing off now, for a whole give-up: three more looks find the hash unknown, and still no note.
  await waitFor(async () => {
    const wait = (JSON.parse((await jobData()) || '{}') as { wait?: { for: string; tries?: number } }).wait;
    return wait?.for === 'backoff' && (wait.tries ?? 0) >= 3;
  }, 20_000, 100);
  expect((await call(svc.publicUrl, 'GET', `/pay/api/${id}`)).body.proof_note ?? null).toBeNull();
}, 90_000);
