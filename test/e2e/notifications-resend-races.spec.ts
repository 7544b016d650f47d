import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { SmtpCatcher } from '../../scripts/smtp-catcher';
import { AFTER_COMMIT_WAIT_MS } from '../../src/common/queue/after-commit-wait';
import { NotificationRelay } from '../../src/modules/notifications/notification-relay';
import { NotificationsRepository } from '../../src/modules/notifications/notifications.repository';
import { verifiedReceipt } from '../factories/notifications';
import { admin } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { RedisServer } from '../support/redis-server';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * The operator's resend (POST /admin/api/notifications/:id/resend) against what runs beside it: a resend
 * decided on a message that has moved on since (another resend, then an attempt that ended in doubt), and
 * Redis away when the job is to be added. From an attacker's findings on the first version.
 */

const row = async (id: string) => (await sql(`SELECT status, attempts, last_error, resent_at FROM notifications WHERE id = $1`, [id]))[0];
const resentRows = (id: string) => sql(`SELECT details FROM audit_events WHERE action = 'notification.resent' AND target_id = $1`, [id]);

afterAll(() => closeSql());

describe('a resend decided on a message that moved on meanwhile', () => {
  // No worker: the worker's steps are the repository's own claim and record, run by the test in order.
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ worker: false, env: { SMTP_URL: 'smtp://127.0.0.1:1', REDIS_PREFIX: `${testEnv().redisPrefix}-ntresend-race` } });
  }, 60000);
  afterAll(async () => {
    await svc?.close();
  });

  it('read failed at attempt 1; meanwhile resent by another and attempt 2 ended in doubt → 409, nothing changes', async () => {
    const repo = svc.app.get(NotificationsRepository);
    const { id } = await verifiedReceipt(svc, `race-${randomBytes(4).toString('hex')}@example.com`);
    expect(await repo.claim(id, 1, 60000, randomUUID())).not.toBeNull();
    expect(await repo.record({ id, attempt: 1, outcome: 'failed', error: '550 no such mailbox', response: null, delayMs: 0 })).toBe(true);

    const lock = new Client({ connectionString: testEnv().databaseUrl });
    await lock.connect();
    try {
      // Operator B's resend reads the message (failed, attempt 1, judged resendable), then waits on its request.
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE payment_requests IN ACCESS EXCLUSIVE MODE');
      const b = admin(svc, 'POST', `/notifications/${id}/resend`);
      // (pg_stat_activity keeps the first 1 kB of a query: TypeORM's alias comes before the table's name.)
      await waitFor(async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"PaymentRequestEntity"%'`)).length > 0, 10000, 20);
      // Operator A's resend reopens it, and a worker's attempt 2 ends in doubt (it may have reached the payer).
      expect(await svc.app.get(DataSource).transaction((em) => repo.reopen(em, id, { attempts: 1, status: 'failed' }))).not.toBeNull();
      expect(await repo.claim(id, 2, 60000, randomUUID())).not.toBeNull();
      expect(await repo.record({ id, attempt: 2, outcome: 'in_doubt', error: 'in doubt: late answer', response: null, delayMs: 0 })).toBe(true);
      const before = await row(id);
      await lock.query('COMMIT');

      const reply = await b;
      expect(reply.status).toBe(409);
      expect(reply.body).toMatchObject({ ok: false, error: 'conflict', errors: [{ field: 'notification_id', message: expect.stringMatching(/changed/) }] });
      expect(await row(id)).toEqual(before);
      expect(before).toMatchObject({ status: 'failed', attempts: 2 });
      // A's reopen went through the repository alone: no operator's resend is on record.
      expect(await resentRows(id)).toEqual([]);
      // Judged on a new read, the in-doubt attempt now needs allow_duplicate.
      expect((await admin(svc, 'POST', `/notifications/${id}/resend`)).body.errors[0].message).toMatch(/allow_duplicate/);
    } finally {
      await lock.end();
    }
  }, 60000);

  it('a reopened message shows no last_error until its next attempt', async () => {
    const repo = svc.app.get(NotificationsRepository);
    const { id } = await verifiedReceipt(svc, `stale-${randomBytes(4).toString('hex')}@example.com`);
    await repo.claim(id, 1, 60000, randomUUID());
    await repo.record({ id, attempt: 1, outcome: 'failed', error: '550 no such mailbox', response: null, delayMs: 0 });
    const r = await admin(svc, 'POST', `/notifications/${id}/resend`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'pending', last_error: null });
    expect((await resentRows(id))[0].details).toMatchObject({ previous_status: 'failed', last_outcome: 'failed', attempts_before: 1, allow_duplicate: false });
  }, 60000);
});

describe('Redis away when the resend adds its job', () => {
  let redis: RedisServer;
  let smtp: SmtpCatcher;
  let svc: TestService;
  beforeAll(async () => {
    redis = await RedisServer.start();
    smtp = await SmtpCatcher.start();
    svc = await startService({
      worker: true,
      env: { REDIS_URL: redis.url, SMTP_URL: smtp.url, MAIL_FROM: 'receipts@mail.example.test', NOTIFY_REDRIVE_MS: '500', REDIS_PREFIX: `${testEnv().redisPrefix}-ntresend-away` },
    });
  }, 60000);
  /** Down during the test: brought back before the service closes, so its connections can end. */
  let away = false;
  afterAll(async () => {
    if (away) await redis.up();
    await svc?.close();
    await smtp?.down();
    await redis?.down();
  });

  it('answers 200 within the after-commit wait; once Redis is back the re-drive sends it, once', async () => {
    const customer = `away-${randomBytes(4).toString('hex')}@example.com`;
    smtp.rcptRule = (to) => (to === customer ? 550 : null);
    const { id } = await verifiedReceipt(svc, customer);
    await svc.app.get(NotificationRelay).enqueue([id]);
    await waitFor(async () => (await row(id)).status === 'failed', 20000);
    smtp.rcptRule = () => null;

    await redis.down();
    away = true;
    const started = Date.now();
    const reply = await admin(svc, 'POST', `/notifications/${id}/resend`);
    expect(reply.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(AFTER_COMMIT_WAIT_MS + 4000);
    expect(await row(id)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await resentRows(id)).toHaveLength(1);

    await redis.up();
    away = false;
    await waitFor(async () => smtp.to(customer).length === 1, 30000);
    await waitFor(async () => (await row(id)).status === 'sent', 10000);
    expect(await sql(`SELECT attempt, outcome FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt`, [id])).toEqual([
      { attempt: 1, outcome: 'failed' },
      { attempt: 2, outcome: 'sent' },
    ]);
    expect(smtp.to(customer)).toHaveLength(1);
  }, 90000);
});
