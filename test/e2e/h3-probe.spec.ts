import { start } from '../../src/bootstrap';
import { testConfig } from '../support/app';
it('probe redis down', async () => {
  const t0 = Date.now();
  const p = start(testConfig({ REDIS_URL: 'redis://127.0.0.1:6390' }), { http: true, worker: false }, {});
  const r = await Promise.race([p.then((s) => ({ s })), new Promise<{ s?: undefined }>((res) => setTimeout(() => res({}), 5000))]);
  console.log('started?', !!r.s, Date.now() - t0);
}, 20000);
