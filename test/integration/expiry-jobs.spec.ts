import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Wallet } from 'ethers';
import { DEV_KEYS, mint, rpc, sendTokenTransfer, withPending } from '../../scripts/chain/local-node';
import { EXPIRY_JOBS, QUEUES } from '../../src/common/queue/queues';
import { expiryDueAt } from '../../src/modules/requests/domain/expiry-due';
import { ExpiryQueue } from '../../src/modules/requests/infrastructure/expiry.queue';
import { mustCreateRequest } from '../factories/requests';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * The expiry jobs (one per due second, ExpiryQueue) on a real worker and Redis. The sweep's period is an hour
 * here, so only the jobs can store an expiry while a test runs.
 */
let svc: TestService;
let partner: TestPartner;
let merchant: Awaited<ReturnType<typeof createOnboardedMerchant>>;
let queue: Queue;

beforeAll(async () => {
  svc = await startService({ worker: true, env: { EXPIRY_SWEEP_INTERVAL_MS: '3600000' } });
  partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
  queue = svc.app.get<Queue>(getQueueToken(QUEUES.expiry), { strict: false });
}, 60000);

afterAll(async () => {
  await closeSql();
  await svc?.close();
});

const create = (i: number) => mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 1000 + i });
const stored = async (id: string) => (await sql<{ status: string }>(`SELECT status FROM payment_requests WHERE id = $1`, [id]))[0].status;
/** Moves a request's deadline (its job stays where its create put it, an hour or more away). */
const lapseIn = async (id: string, ms: number): Promise<Date> =>
  (await sql<{ expires_at: Date }>(
    `UPDATE payment_requests SET expires_at = now() + $2 * interval '1 millisecond', claim_until = now() + interval '1 hour'
      WHERE id = $1 RETURNING expires_at`,
    [id, ms],
  ))[0].expires_at;

describe('expiry jobs', () => {
  it('creates that expire in the same second share one delayed job, named by that second', async () => {
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i)));
    const due = new Set(created.map((r) => expiryDueAt(Date.parse(r.expires_at))));
    // 20 creates finish within a second or two of each other.
    expect(due.size).toBeLessThanOrEqual(3);
    const delayed = await queue.getDelayed();
    const ours = delayed.filter((j) => due.has((j.data as { dueAt: number }).dueAt));
    expect(ours.map((j) => j.id).sort()).toEqual([...due].map((d) => `expire-at-${d}`).sort());
    for (const j of ours) {
      expect(j.name).toBe(EXPIRY_JOBS.due);
      // Runs at its moment: delay and timestamp come from two readings of the clock, a millisecond apart at most.
      expect(j.timestamp + j.delay - (j.data as { dueAt: number }).dueAt).toBeGreaterThanOrEqual(0);
      expect(j.timestamp + j.delay - (j.data as { dueAt: number }).dueAt).toBeLessThan(50);
    }
  });

  it('a due job stores every expiry lapsed by its moment, and nothing that has not lapsed', async () => {
    const [a, b, later] = await Promise.all([create(100), create(101), create(102)]);
    const at = await lapseIn(a.request_id, 400);
    await lapseIn(b.request_id, 200); // its own job lost (Redis away at its create): a's job stores it too
    await lapseIn(later.request_id, 60_000);
    expect(svc.app.get(ExpiryQueue).schedule(at)).not.toBeNull();

    await waitFor(async () => (await stored(a.request_id)) === 'expired', 10000);
    expect(await stored(b.request_id)).toBe('expired');
    expect(await stored(later.request_id)).toBe('requested');
    const [row] = await sql<{ expired_at: Date }>(`SELECT expired_at FROM payment_requests WHERE id = $1`, [a.request_id]);
    // Run at the whole second after the deadline, not before it.
    expect(row.expired_at.getTime()).toBeGreaterThanOrEqual(expiryDueAt(at.getTime()));
  });

  it('a second schedule for a moment this process added waits for nothing', async () => {
    const moment = new Date(Date.now() + 3_600_000);
    const first = svc.app.get(ExpiryQueue).schedule(moment);
    expect(first).not.toBeNull();
    expect(svc.app.get(ExpiryQueue).schedule(moment)).toBe(first); // while the add is in flight: the same add
    await first;
    expect(svc.app.get(ExpiryQueue).schedule(moment)).toBeNull();
    expect(await queue.getJob(`expire-at-${expiryDueAt(moment.getTime())}`)).toBeTruthy();
  });

  it('a request with an attached proof is stored expired at the second after its claim window closes', async () => {
    const r = await create(300);
    // A short window: expires_at soon, the claim window (where an attached proof lapses) a second after it.
    await sql(
      `UPDATE payment_requests SET expires_at = now() + interval '600 milliseconds', claim_until = now() + interval '1600 milliseconds'
        WHERE id = $1`,
      [r.request_id],
    );
    const { rpcUrl, token } = testEnv();
    await mint(rpcUrl, token, new Wallet(DEV_KEYS[1]).address, 10n ** 9n);
    // A pending transaction: attached (it may still pay), never mined here.
    await withPending(rpcUrl, async () => {
      const hash = await sendTokenTransfer(rpcUrl, token, DEV_KEYS[1], Wallet.createRandom().address, 1n);
      const attached = await call(svc.publicUrl, 'POST', `/pay/api/${r.request_id}/proof`, { body: { tx_hash: hash } });
      expect(attached.body.proof_status).toBe('attached');
      await rpc(rpcUrl, 'hardhat_dropTransaction', [hash]);
    });
    const [{ claim_until: claimUntil }] = await sql<{ claim_until: Date }>(`SELECT claim_until FROM payment_requests WHERE id = $1`, [r.request_id]);
    expect(await queue.getJob(`expire-at-${expiryDueAt(claimUntil.getTime())}`)).toBeTruthy();

    await waitFor(async () => (await stored(r.request_id)) === 'expired', 10000);
    const [row] = await sql<{ proof_status: string; expired_at: Date }>(`SELECT proof_status, expired_at FROM payment_requests WHERE id = $1`, [r.request_id]);
    expect(row.proof_status).toBe('attached');
    expect(row.expired_at.getTime()).toBeGreaterThanOrEqual(expiryDueAt(claimUntil.getTime()));
  });

  it('a job of one request, as older builds queued them, still expires it', async () => {
    const r = await create(200);
    await lapseIn(r.request_id, -1000);
    await queue.add(EXPIRY_JOBS.one, { requestId: r.request_id }, { jobId: `expire-${r.request_id}` });
    await waitFor(async () => (await stored(r.request_id)) === 'expired', 10000);
  });
});
