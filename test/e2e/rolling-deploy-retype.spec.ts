import { DataSource } from 'typeorm';
import { preparedQuery } from '../../src/database/prepared';
import { WebhookEventsRepository } from '../../src/modules/webhooks/webhook-events.repository';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { createRequest, idemKey } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';

/*
 * A rolling deploy: the new build's migration changes the type of a column that this (running, older) build's
 * named prepared statements return. Postgres then refuses each such statement on every connection that had
 * prepared it, "cached plan must not change result type" (0A000), until the connection closes: an instance of
 * the build before 1764000403000 (metadata jsonb -> json) answered 500 to every create and get it served after
 * the migration, and its worker could not read any webhook payload (tried against d18bb18, test/scratch/mixed).
 * Here the column goes back to jsonb (what 1764000403000's down does) while this build runs.
 */
let svc: TestService;

const retype = async (type: 'json' | 'jsonb') => {
  for (const t of ['payment_requests', 'plans']) {
    await sql(`ALTER TABLE ${t} ALTER COLUMN metadata DROP DEFAULT`);
    await sql(`ALTER TABLE ${t} ALTER COLUMN metadata TYPE ${type} USING metadata::${type}`);
    await sql(`ALTER TABLE ${t} ALTER COLUMN metadata SET DEFAULT '{}'::${type}`);
  }
};

beforeAll(async () => {
  svc = await startService({ worker: false });
});

afterAll(async () => {
  await retype('json');
  await closeSql();
  await svc?.close();
});

it('a statement prepared before a migration retyped a column it returns is prepared again: creates, gets and payload reads go on', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const create = () => createRequest(svc, p.testKey, { idempotency_key: idemKey(), account_id: m.id, fiat_amount_int: 1500, metadata: { order: 'a' } });
  const get = (id: string) => call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: p.testKey });
  const events = svc.app.get(WebhookEventsRepository);
  // The worker's claim reads the payload's fields (metadata among them) in its statement: an event to claim
  // per request, abandoned at the end so that no worker of a later file sends it.
  const payloadRead = async (requestId: string) => {
    const [{ id }] = await sql<{ id: string }>(
      `INSERT INTO webhook_events (partner_id, request_id, event, test_mode, deliver, state)
       VALUES ($1, $2, 'payment.proof_verified', true, true, 'pending') RETURNING id`,
      [p.id, requestId],
    );
    try {
      return (await events.claimMany([{ eventId: id, attempt: 1 }]))[0]?.request?.metadata;
    } finally {
      await sql(`UPDATE webhook_events SET state = 'abandoned' WHERE id = $1`, [id]);
    }
  };

  // One after the other, so each statement is prepared on the pooled connection the later calls get back.
  const first = await create();
  expect(first.status).toBe(201);
  expect((await get(first.body.request_id)).status).toBe(200);
  expect(await payloadRead(first.body.request_id)).toEqual({ order: 'a' });

  await retype('jsonb');

  const second = await create();
  expect(second.status).toBe(201);
  expect(second.body.metadata).toEqual({ order: 'a' });
  const got = await get(first.body.request_id);
  expect(got.status).toBe(200);
  expect(got.body.metadata).toEqual({ order: 'a' });
  expect(await payloadRead(second.body.request_id)).toEqual({ order: 'a' });
}, 60_000);

it('inside a transaction the refused statement fails that transaction only: the next one on the connection runs it', async () => {
  const qr = svc.app.get(DataSource).createQueryRunner();
  await qr.connect();
  try {
    const read = () => preparedQuery(qr.manager, 'rolling_deploy_retype_probe', 'SELECT metadata FROM payment_requests LIMIT 1', []);
    await read();
    await retype('json');
    await qr.startTransaction();
    await expect(read()).rejects.toMatchObject({ code: '0A000' });
    await qr.rollbackTransaction();
    await qr.startTransaction();
    await expect(read()).resolves.toHaveLength(1);
    await qr.commitTransaction();
  } finally {
    await qr.release();
  }
});
