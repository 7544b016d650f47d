import type Redis from 'ioredis';
import { mine } from '../../scripts/chain/local-node';
import type { TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { attachDroppedHash, startWithOwnRedis } from '../support/dropped-hash';
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
