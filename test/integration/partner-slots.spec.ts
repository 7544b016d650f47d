import { RedisConnections } from '../../src/common/redis/redis.module';
import { PartnerSlots } from '../../src/modules/webhooks/partner-slots';
import { testConfig } from '../support/app';
import { waitFor } from '../support/wait';

/** The per-partner delivery slots on the real Redis, shared by every worker. */
describe('partner delivery slots', () => {
  const config = testConfig();
  let redis: RedisConnections;
  let slots: PartnerSlots;
  let otherRedis: RedisConnections;
  let otherWorker: PartnerSlots;

  beforeAll(async () => {
    // Two workers: each its own connection, the same Redis and prefix.
    redis = new RedisConnections(config);
    otherRedis = new RedisConnections(config);
    await waitFor(async () => redis.main.status === 'ready' && otherRedis.main.status === 'ready');
    slots = new PartnerSlots(config, redis);
    otherWorker = new PartnerSlots(config, otherRedis);
  });

  afterAll(async () => {
    await redis.onApplicationShutdown();
    await otherRedis.onApplicationShutdown();
  });

  it('grants at most the limit across workers, and a released slot is granted again', async () => {
    const held = await Promise.all([1, 2, 3].map((i) => (i % 2 ? slots : otherWorker).tryAcquire('p-1', 3, 60000)));
    expect(held.every(Boolean)).toBe(true);
    expect(await slots.tryAcquire('p-1', 3, 60000)).toBeNull();
    expect(await otherWorker.tryAcquire('p-1', 3, 60000)).toBeNull();
    await held[0]!.release();
    expect(await otherWorker.tryAcquire('p-1', 3, 60000)).not.toBeNull();
  });

  it('counts each partner apart', async () => {
    for (let i = 0; i < 2; i++) expect(await slots.tryAcquire('p-2', 2, 60000)).not.toBeNull();
    expect(await slots.tryAcquire('p-2', 2, 60000)).toBeNull();
    expect(await slots.tryAcquire('p-3', 2, 60000)).not.toBeNull();
  });

  it('frees the slot of a worker that died holding it once its lease runs out', async () => {
    expect(await slots.tryAcquire('p-4', 1, 300)).not.toBeNull(); // never released: the holder died
    expect(await slots.tryAcquire('p-4', 1, 300)).toBeNull();
    await waitFor(async () => (await slots.tryAcquire('p-4', 1, 60000)) !== null, 5000, 50);
  });

  it('grants exactly the limit when 50 workers ask at once', async () => {
    const got = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? slots : otherWorker).tryAcquire('p-5', 10, 60000)));
    expect(got.filter(Boolean)).toHaveLength(10);
  });
});
