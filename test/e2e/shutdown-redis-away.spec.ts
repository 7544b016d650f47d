import { startService } from '../support/app';
import { closeSql } from '../support/db';
import { RedisServer } from '../support/redis-server';

/*
 * Closing the service (SIGTERM) while Redis is away or stalled: a worker waited forever for an 'end' event
 * that ioredis never emits for a client it is reconnecting, even once Redis was back; an HTTP-only process
 * waited as long as the stall for its queues' QUIT (once past a test's 60 s in CI). A helper traced both.
 * Now close asks Redis first (a PING, 1 s): silent, every queue and worker is closed without waiting for it.
 */
afterAll(async () => {
  await closeSql();
});

it('a worker closes promptly when Redis has gone away', async () => {
  const redis = await RedisServer.start();
  const svc = await startService({ worker: true, env: { REDIS_URL: redis.url } });
  try {
    await redis.down();
    // Before: never returned (the test's timeout is the bound).
    await svc.close();
  } finally {
    await redis.down();
  }
}, 45_000);

it('an API process closes while Redis stalls for good', async () => {
  const redis = await RedisServer.start();
  const svc = await startService({ env: { REDIS_URL: redis.url } });
  redis.stall();
  try {
    // Before: returned only once Redis answered again (here never: the test's timeout is the bound).
    await svc.close();
  } finally {
    redis.resume();
    await redis.down();
  }
}, 45_000);
