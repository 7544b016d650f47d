import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { TcpProxy } from '../support/tcp-proxy';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * Postgres unreachable (restarting, a failover, a partition), seen through a connection-cutting proxy in front
 * of the run's server: /health/ready turns 503 naming postgres, with the reason on the admin listener, and 200
 * again once it answers. (terminus's TypeOrmHealthIndicator.pingCheck resolves to a "down" result instead of
 * throwing, and readiness awaited it as if it threw: it stayed 200 for as long as Postgres was away, while
 * every admin and partner call answered 500.)
 */
let pg: TcpProxy;
let svc: TestService;

beforeAll(async () => {
  const url = new URL(testEnv().databaseUrl);
  pg = new TcpProxy(Number(url.port || 5432));
  await pg.start();
  url.host = `127.0.0.1:${pg.port}`;
  svc = await startService({ env: { DATABASE_URL: url.toString() } });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await pg?.stop();
});

/** The admin listener's readiness once it answers `status`. */
const readyWith = async (status: number) =>
  (await waitFor(async () => {
    const r = await call(svc.adminUrl, 'GET', '/health/ready');
    return r.status === status ? r : null;
  }, 15000, 200))!;

it('is 503 naming postgres while it is unreachable, and 200 again once it is back', async () => {
  expect((await call(svc.adminUrl, 'GET', '/health/ready')).status).toBe(200);

  await pg.cut();
  const down = await readyWith(503);
  expect(down.body).toMatchObject({ ok: false, status: 'error' });
  expect(down.body.error.postgres).toMatchObject({ status: 'down', message: expect.any(String) });
  expect(down.body.error.postgres.message.length).toBeGreaterThan(0);
  expect(down.body.details.redis.status).toBe('up');
  expect(down.body.details.chain_test.status).toBe('up');
  // The public listener shows the status without the driver's message.
  const pub = await call(svc.publicUrl, 'GET', '/health/ready');
  expect(pub.status).toBe(503);
  expect(pub.body.error.postgres.status).toBe('down');
  expect(pub.body.error.postgres).not.toHaveProperty('message');
  expect((await call(svc.publicUrl, 'GET', '/health/live')).status).toBe(200);

  await pg.restore();
  const up = await readyWith(200);
  expect(up.body.details.postgres.status).toBe('up');
}, 60000);
