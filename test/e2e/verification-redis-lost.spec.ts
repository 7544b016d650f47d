import type Redis from 'ioredis';
import { mine, transferToken } from '../../scripts/chain/local-node';
import type { TestService } from '../support/app';
import { attachDroppedHash, PAYER, startWithOwnRedis } from '../support/dropped-hash';
import { call } from '../support/http';
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
let svc: TestService;
let cli: Redis;
let close: () => Promise<void>;
const env = testEnv();

beforeAll(async () => {
  ({ svc, cli, close } = await startWithOwnRedis(GIVE_UP_MS));
});
afterAll(async () => {
  await close?.();
});

const note = async (id: string) => (await call(svc.publicUrl, 'GET', `/pay/api/${id}`)).body.proof_note;

it('Redis losing its data while a job backs off: the verification is queued again, the hash given up on, and the real payment accepted', async () => {
  const r = await attachDroppedHash(svc);
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
