import { start } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config';
import { testEnvVars } from '../support/app';
import { testEnv } from '../support/test-env';

/*
 * Every role starts: the module graph resolves whatever is mounted. A process with neither listener nor worker
 * (bench/webhook-producer.ts commits events and relays them) once failed to start, silently, when a module of
 * every role came to need a provider only the listener's and the worker's graphs imported.
 */
it.each([
  { http: false, worker: false },
  { http: false, worker: true },
  { http: true, worker: false },
])('starts and stops with %j', async (roles) => {
  const running = await start(loadConfig(testEnvVars({ REDIS_PREFIX: `${testEnv().redisPrefix}-roles` })), roles, { logger: false });
  await running.close();
}, 60000);
