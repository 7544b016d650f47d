import { AssetRegistry } from '../../src/modules/chain/asset-registry';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { findFreePort } from '../../scripts/chain/local-node';
import { startService, type TestService } from '../support/app';
import { RedisServer } from '../support/redis-server';
import { call } from '../support/http';
import { waitFor } from '../support/wait';

/**
 * Issue 6 item 4, health: /health/live and /health/ready on both listeners; ready turns 503 when Redis goes
 * away and 200 again when it returns; a dead, hanging or wrong-chain RPC makes its mode unhealthy within
 * about a second, without leaking the RPC URL's credentials.
 */

describe('health on a healthy service', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each(['publicUrl', 'adminUrl'] as const)('answers /health/live and /health/ready on %s', async (listener) => {
    const live = await call(svc[listener], 'GET', '/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ ok: true, status: 'ok' });

    const ready = await call(svc[listener], 'GET', '/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.ok).toBe(true);
    expect(ready.body.status).toBe('ok');
    for (const key of ['postgres', 'redis', 'chain_test', 'chain_live']) {
      expect(ready.body.details[key]).toMatchObject({ status: 'up' });
    }
    expect(ready.body.details.chain_test.chain_id).toBe('31337');
    expect(ready.headers.get('cache-control')).toBe('no-store');
  });

  it('answers many concurrent readiness probes from one round of checks', async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => call(svc.publicUrl, 'GET', '/health/ready')));
    expect(replies.every((r) => r.status === 200)).toBe(true);
  });
});

describe('readiness follows Redis', () => {
  let redis: RedisServer;
  let svc: TestService;

  beforeAll(async () => {
    redis = await RedisServer.start();
    svc = await startService({ env: { REDIS_URL: redis.url } });
  });
  afterAll(async () => {
    await svc?.close();
    await redis?.down();
  });

  it('is 200, then 503 naming redis while it is down, then 200 again once it is back', async () => {
    const before = await call(svc.adminUrl, 'GET', '/health/ready');
    expect(before.status).toBe(200);

    await redis.down();
    const down = (await waitFor(async () => {
      const r = await call(svc.publicUrl, 'GET', '/health/ready');
      return r.status === 503 ? r : null;
    }, 15000, 200))!;
    expect(down.body.ok).toBe(false);
    expect(down.body.status).toBe('error');
    expect(down.body.error.redis.status).toBe('down');
    expect(down.body.error.redis).not.toHaveProperty('message');
    expect(down.body.details.postgres.status).toBe('up');
    expect(down.body.details.chain_test.status).toBe('up');
    // Liveness does not depend on Redis.
    expect((await call(svc.publicUrl, 'GET', '/health/live')).status).toBe(200);

    // Still bounded while Redis is away.
    const t0 = Date.now();
    expect((await call(svc.adminUrl, 'GET', '/health/ready')).status).toBe(503);
    expect(Date.now() - t0).toBeLessThan(3000);

    await redis.up();
    const up = (await waitFor(async () => {
      const r = await call(svc.adminUrl, 'GET', '/health/ready');
      return r.status === 200 ? r : null;
    }, 20000, 200))!;
    expect(up.body.details.redis.status).toBe('up');
  });
});

describe('readiness follows each mode\'s RPC', () => {
  let hanging: Server;
  const sockets = new Set<Socket>();
  let svc: TestService;
  let deadPort: number;

  beforeAll(async () => {
    // Accepts connections and never answers: the RPC that hangs (start-up waits CHAIN_RPC_TIMEOUT_MS for it).
    hanging = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    deadPort = await findFreePort();
    const hangingPort = (hanging.address() as { port: number }).port;
    svc = await startService({
      env: {
        // Credentials in the URL, as hosted RPC providers do: they must not appear in the public answer.
        CHAIN_LIVE_RPC_URL: `http://rpcuser:rpc-password-123@127.0.0.1:${hangingPort}/v3/PROVIDERKEY123`,
        // Longer than the readiness bound, so the answer's speed is the health check's doing.
        CHAIN_RPC_TIMEOUT_MS: '5000',
      },
    });
  });
  afterAll(async () => {
    await svc?.close();
    for (const s of sockets) s.destroy();
    await new Promise((r) => hanging.close(r));
  });

  it('a hanging live RPC makes ready 503 within about a second, naming chain_live only', async () => {
    const t0 = Date.now();
    const r = await call(svc.publicUrl, 'GET', '/health/ready');
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(r.status).toBe(503);
    expect(r.body.error.chain_live.status).toBe('down');
    expect(Object.keys(r.body.error)).toEqual(['chain_live']);
    expect(r.body.details.chain_test.status).toBe('up');
    expect(r.text).not.toContain('PROVIDERKEY123');
    expect(r.text).not.toContain('rpc-password-123');
    expect(r.text).not.toContain('rpcuser');
    // The public listener says which check is down, not why: the reason names internal hosts.
    expect(r.body.error.chain_live).not.toHaveProperty('message');
    expect(r.body.details.chain_live).not.toHaveProperty('message');
    expect(r.text).not.toContain('127.0.0.1');
  });

  it('the admin listener gives the reason, URLs cut to their origin', async () => {
    const r = await call(svc.adminUrl, 'GET', '/health/ready');
    expect(r.status).toBe(503);
    expect(r.body.error.chain_live).toMatchObject({ status: 'down', message: expect.any(String) });
    expect(r.text).not.toContain('PROVIDERKEY123');
    expect(r.text).not.toContain('rpc-password-123');
  });

  it("the registry's own status keeps no credentials either (verification jobs quote it: failed reasons in Redis, the queue board)", async () => {
    // A provider that answers 502: ethers' error quotes the request URL whole.
    const gateway = createHttpServer((_req, res) => res.writeHead(502, { connection: 'close' }).end());
    await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
    const port = (gateway.address() as { port: number }).port;
    const failing = await startService({
      env: { CHAIN_TEST_RPC_URL: `http://rpcuser:rpc-password-123@127.0.0.1:${port}/v3/PROVIDERKEY123`, CHAIN_RPC_TIMEOUT_MS: '500' },
    });
    try {
      const status = JSON.stringify(failing.app.get(AssetRegistry).status('test'));
      expect(status).toMatch(/unreachable.*502/);
      expect(status).toContain(`127.0.0.1:${port}`);
      for (const secret of ['PROVIDERKEY123', 'rpc-password-123', 'rpcuser']) expect(status).not.toContain(secret);
    } finally {
      await failing.close();
      await new Promise((r) => gateway.close(r));
    }
  });

  it('a wrong chain id and an unreachable RPC are both reported', async () => {
    const wrong = await startService({ env: { CHAIN_LIVE_CHAIN_ID: '1' } });
    const dead = await startService({ env: { CHAIN_TEST_RPC_URL: `http://127.0.0.1:${deadPort}`, CHAIN_RPC_TIMEOUT_MS: '500' } });
    try {
      const w = await call(wrong.adminUrl, 'GET', '/health/ready');
      expect(w.status).toBe(503);
      expect(w.body.error.chain_live.message).toMatch(/chain id 31337.*CHAIN_LIVE_CHAIN_ID is 1/);
      expect(w.body.details.chain_test.status).toBe('up');

      const d = await call(dead.publicUrl, 'GET', '/health/ready');
      expect(d.status).toBe(503);
      expect(d.body.error.chain_test.status).toBe('down');
      expect(d.body.error.chain_test).not.toHaveProperty('message');
      expect(d.body.details.chain_live.status).toBe('up');
      expect(d.text).not.toContain(String(deadPort));
      const onAdmin = await call(dead.adminUrl, 'GET', '/health/ready');
      expect(onAdmin.body.error.chain_test.message).toContain(`127.0.0.1:${deadPort}`);
    } finally {
      await wrong.close();
      await dead.close();
    }
  });
});
