import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { NotificationsRepository } from '../../src/modules/notifications/notifications.repository';
import { verifiedReceipt } from '../factories/notifications';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { waitFor } from '../support/wait';

/*
 * The re-drive's verdict on a message whose worker held it past its lease (NotificationsRepository.failInDoubt),
 * against real Postgres, with the worker's steps made by hand: the claim, the hand-over mark, the lapse. No
 * worker runs here, so nothing but this file decides these messages.
 */
const DAY_MS = 86_400_000;
let svc: TestService;
let repo: NotificationsRepository;

beforeAll(async () => {
  // A mail server is configured so receipts are written; no worker runs, so none is ever contacted.
  svc = await startService({ worker: false, env: { SMTP_URL: 'smtp://127.0.0.1:9', MAIL_FROM: 'receipts@mail.example.test' } });
  repo = svc.app.get(NotificationsRepository);
});

afterAll(async () => {
  await closeSql();
  await svc?.close();
});

/** A receipt claimed as attempt 1 by the current worker, its lease already over. */
async function lapsedClaim(): Promise<string> {
  const { id } = await verifiedReceipt(svc, `lapsed-${randomBytes(3).toString('hex')}@example.com`);
  expect(await repo.claim(id, 1, 60_000, randomUUID())).not.toBeNull();
  await sql(`UPDATE notifications SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
  return id;
}

async function verdict(id: string): Promise<string | undefined> {
  return (await repo.failInDoubt(DAY_MS)).find((d) => d.id === id)?.outcome;
}

async function state(id: string): Promise<unknown> {
  const [n] = await sql(`SELECT status, lease_until IS NULL AS released FROM notifications WHERE id = $1`, [id]);
  const [a] = await sql(`SELECT outcome FROM notification_attempts WHERE notification_id = $1 AND attempt = 1`, [id]);
  return { ...n, attempt: a.outcome };
}

it('claimed by this worker, nothing handed over → tried again', async () => {
  const id = await lapsedClaim();
  expect(await verdict(id)).toBe('retry');
  expect(await state(id)).toEqual({ status: 'pending', released: true, attempt: 'retry' });
});

it('handed over before the worker stopped → in doubt, never sent again', async () => {
  const id = await lapsedClaim();
  await sql(`UPDATE notification_attempts SET handed_over_at = now() WHERE notification_id = $1`, [id]);
  expect(await verdict(id)).toBe('in_doubt');
  expect(await state(id)).toEqual({ status: 'failed', released: true, attempt: 'in_doubt' });
});

it('claimed by a worker from before the hand-over mark (a rolling deploy) → in doubt: its missing mark says nothing', async () => {
  const { id } = await verifiedReceipt(svc, `old-worker-${randomBytes(3).toString('hex')}@example.com`);
  // The claim as workers before migration 1764000403300 wrote it: no hand-over column named.
  await sql(
    `WITH c AS (UPDATE notifications SET attempts = 1, lease_until = now() - interval '1 second' WHERE id = $1 RETURNING id, attempts, "to")
     INSERT INTO notification_attempts (notification_id, attempt, outcome, "to") SELECT id, attempts, 'sending', "to" FROM c`,
    [id],
  );
  expect(await verdict(id)).toBe('in_doubt');
  expect(await state(id)).toEqual({ status: 'failed', released: true, attempt: 'in_doubt' });
});

it('a hand-over mark that commits while the re-drive waits for the attempt row → in doubt, not tried again', async () => {
  const id = await lapsedClaim();
  const marker = svc.app.get(DataSource).createQueryRunner();
  try {
    await marker.startTransaction();
    const [{ pid }] = await marker.query(`SELECT pg_backend_pid() AS pid`);
    await marker.query(`UPDATE notification_attempts SET handed_over_at = now() WHERE notification_id = $1 AND attempt = 1`, [id]);
    const pending = verdict(id);
    await waitFor(async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid])).length > 0, 10_000);
    await marker.commitTransaction();
    expect(await pending).toBe('in_doubt');
  } finally {
    if (marker.isTransactionActive) await marker.rollbackTransaction();
    await marker.release();
  }
  expect(await state(id)).toEqual({ status: 'failed', released: true, attempt: 'in_doubt' });
});

it('nothing handed over, but the message is past NOTIFY_GIVE_UP_MS → abandoned unsent, not tried again', async () => {
  const id = await lapsedClaim();
  await sql(`UPDATE notifications SET created_at = now() - interval '25 hours' WHERE id = $1`, [id]);
  expect(await verdict(id)).toBe('abandoned');
  expect(await state(id)).toEqual({ status: 'abandoned', released: true, attempt: 'abandoned' });
});

it('resent by an operator within NOTIFY_GIVE_UP_MS → the give-up age counts from the resend: tried again', async () => {
  const id = await lapsedClaim();
  await sql(`UPDATE notifications SET created_at = now() - interval '3 days', resent_at = now() - interval '1 hour' WHERE id = $1`, [id]);
  expect(await verdict(id)).toBe('retry');
});

it('the hand-over mark once the re-drive decided the attempt → refused: nothing may be sent', async () => {
  const id = await lapsedClaim();
  expect(await verdict(id)).toBe('retry');
  expect(await repo.markHandedOver(id, 1)).toBe(false);
});
