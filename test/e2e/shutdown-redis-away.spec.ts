import { startService } from '../support/app';
import { closeSql } from '../support/db';
import { RedisServer } from '../support/redis-server';

/*
 * Closing an API process (SIGTERM) while Redis stalls: it waited as long as the stall for its queues' QUIT
 * (once past a test's 60 s in CI; a helper traced it). Now the queues' connections are dropped 10 s into the
 * close. (A worker stopped while Redis is away still waits: its running jobs finish and record first;
 * docs/operations.md.)
 */
afterAll(async () => {
  await closeSql();
});

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
