import { admin, createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { RedisServer } from '../support/redis-server';
import { waitFor } from '../support/wait';
import { RedisConnections } from '../../src/common/redis/redis.module';

/*
 * A call admitted on its key, whose rate-limit count then hangs on a stalled Redis (up to the command timeout,
 * after which the limit fails open), must not act after its key was revoked meanwhile (a helper's hunt: the
 * create answered 201 about 850 ms after the revocation had answered). Instance a runs on the machine's Redis,
 * instance b on one of its own, which stalls: a partition of b alone.
 */
let redis: RedisServer;
let a: TestService;
let b: TestService;
let p: TestPartner;
let merchantId: string;

beforeAll(async () => {
  redis = await RedisServer.start();
  a = await startService();
  b = await startService({ env: { REDIS_URL: redis.url } });
  p = await createPartner(a);
  merchantId = (await createOnboardedMerchant(a, p.testKey)).id;
}, 60000);

afterAll(async () => {
  redis?.resume();
  await a?.close();
  await b?.close();
  await redis?.down();
  await closeSql();
});

it('a create waiting on a stalled Redis when its key is revoked is refused 401, and creates nothing', async () => {
  const issued = await admin(a, 'POST', `/partners/${p.id}/keys`, { mode: 'test' });
  const key = issued.body.api_key as string;
  expect((await call(b.publicUrl, 'GET', '/api/v1/merchants', { key })).status).toBe(200);
  redis.stall();
  try {
    // Commands b has sent its Redis and heard no answer to.
    const unanswered = () => (b.app.get(RedisConnections).main as unknown as { commandQueue: { length: number } }).commandQueue.length;
    const before = unanswered();
    const create = call(b.publicUrl, 'POST', '/api/v1/requests/create', { key, body: { account_id: merchantId, fiat_amount_int: 4242 } });
    // The create is past its key check, waiting on its count (b's feed still hears a's revocation: Postgres).
    await waitFor(async () => unanswered() > before, 5000, 5);
    expect((await admin(a, 'DELETE', `/partners/${p.id}/keys/${issued.body.key_id}`)).status).toBe(200);
    const c = await create;
    expect(c.status).toBe(401);
    expect(c.body).toMatchObject({ ok: false, error: 'unauthorized' });
    expect(await sql(`SELECT id FROM payment_requests WHERE merchant_id = $1 AND fiat_amount = 4242`, [merchantId])).toEqual([]);
  } finally {
    redis.resume();
  }
});
