import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { classifyOutcome } from './delivery-policy';
import { WebhookPoster, type PostOutcome } from './webhook-poster';

// Real servers on 127.0.0.1, port 0. Nothing here touches a non-loopback address.

interface TestServer {
  url: string;
  port: number;
  connections: () => number;
  requests: Array<{ method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }>;
  close: () => Promise<void>;
}

async function startServer(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<TestServer> {
  let connections = 0;
  const requests: TestServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      handler(req, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: () => connections,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A bare TCP listener: counts connection attempts, never speaks HTTP. */
async function startTcpCounter(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const BODY = JSON.stringify({ event: 'payment.proof_verified', delivery_id: '7d6f1f0e-3a47-4b8e-9a51-6f1d2c3b4a59', note: 'café' });
const HEADERS = {
  'content-type': 'application/json',
  'x-service-signature': `v1=${'a'.repeat(64)},t=1760000000`,
  'x-service-event': 'payment.proof_verified',
  'x-service-delivery': '7d6f1f0e-3a47-4b8e-9a51-6f1d2c3b4a59',
  'user-agent': 'Service-Webhook/1.0',
};

describe('WebhookPoster (allowPrivate: true, loopback receivers)', () => {
  const servers: TestServer[] = [];
  const posters: WebhookPoster[] = [];
  const poster = (opts: Partial<ConstructorParameters<typeof WebhookPoster>[0]> = {}) => {
    // A deadline that a loaded machine never reaches (fresh-clone CI: a 500 ms default timed out a plain 200 on
    // a new connection); the deadline tests pass their own.
    const p = new WebhookPoster({ allowPrivate: true, timeoutMs: 5000, ...opts });
    posters.push(p);
    return p;
  };
  const server = async (handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) => {
    const s = await startServer(handler);
    servers.push(s);
    return s;
  };
  afterEach(async () => {
    for (const p of posters.splice(0)) p.close();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('200 → delivered, with the body and headers as given', async () => {
    const s = await server((_req, res) => res.writeHead(200).end('ok'));
    const o = await poster().post(`${s.url}/hooks/prs?x=1`, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: 200, errorClass: null });
    expect(o.durationMs).toBeGreaterThanOrEqual(0);
    expect(classifyOutcome(o)).toBe('delivered');
    expect(s.requests).toHaveLength(1);
    const [r] = s.requests;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/hooks/prs?x=1');
    expect(r.body).toBe(BODY);
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(BODY)));
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['user-agent']).toBe('Service-Webhook/1.0');
    expect(r.headers['x-service-signature']).toBe(HEADERS['x-service-signature']);
    expect(r.headers['x-service-delivery']).toBe(HEADERS['x-service-delivery']);
  });

  it.each([201, 202, 204])('%i → delivered', async (status) => {
    const s = await server((_req, res) => res.writeHead(status).end());
    const o = await poster().post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: status, errorClass: null });
    expect(classifyOutcome(o)).toBe('delivered');
  });

  it.each([400, 401, 404, 410, 422])('%i → abandon', async (status) => {
    const s = await server((_req, res) => res.writeHead(status).end('no'));
    const o = await poster().post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: status, errorClass: null });
    expect(classifyOutcome(o)).toBe('abandoned');
  });

  it.each([429, 500, 502, 503])('%i → retry', async (status) => {
    const s = await server((_req, res) => res.writeHead(status).end('later'));
    const o = await poster().post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: status, errorClass: null });
    expect(classifyOutcome(o)).toBe('retry');
  });

  it.each([301, 302, 307, 308])('%i → redirect not followed, retry', async (status) => {
    const s = await server((req, res) => {
      if (req.url === '/elsewhere') res.writeHead(200).end();
      else res.writeHead(status, { location: '/elsewhere' }).end();
    });
    const o = await poster().post(`${s.url}/hook`, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: status, errorClass: 'redirect' });
    expect(o.errorMessage).toContain('/elsewhere');
    expect(classifyOutcome(o)).toBe('retry');
    expect(s.requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it('connection refused → network, retry', async () => {
    const s = await startServer(() => undefined);
    const url = s.url;
    await s.close();
    const o = await poster().post(url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'network' });
    expect(o.errorMessage).toContain('ECONNREFUSED');
    expect(classifyOutcome(o)).toBe('retry');
  });

  it('a connection closed without a response → network', async () => {
    const s = await server((req) => req.socket.destroy());
    const o = await poster().post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'network' });
  });

  it('an answer after the deadline → timeout at the deadline; one before it → delivered', async () => {
    const s = await server((req, res) => {
      const delay = req.url === '/slow' ? 900 : 300;
      setTimeout(() => res.writeHead(200).end('ok'), delay);
    });
    const p = poster({ timeoutMs: 500 });

    const slow = await p.post(`${s.url}/slow`, BODY, HEADERS);
    expect(slow).toMatchObject({ statusCode: null, errorClass: 'timeout' });
    expect(slow.durationMs).toBeGreaterThanOrEqual(490);
    expect(slow.durationMs).toBeLessThan(800);
    expect(classifyOutcome(slow)).toBe('retry');

    const fast = await p.post(`${s.url}/fast`, BODY, HEADERS);
    expect(fast).toMatchObject({ statusCode: 200, errorClass: null });
    expect(fast.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('a body trickled past the deadline → timeout (the 200 does not count), connection cut', async () => {
    let serverSawClose = false;
    const s = await server((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '40' });
      let sent = 0;
      const timer = setInterval(() => {
        if (sent++ >= 40) return clearInterval(timer);
        res.write('x');
      }, 100);
      req.socket.on('close', () => {
        serverSawClose = true;
        clearInterval(timer);
      });
    });
    const o = await poster({ timeoutMs: 500 }).post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'timeout' });
    expect(o.errorMessage).toBeDefined();
    expect(o.durationMs).toBeGreaterThanOrEqual(490);
    expect(o.durationMs).toBeLessThan(800);
    expect(classifyOutcome(o)).toBe('retry');
    await new Promise((r) => setTimeout(r, 100));
    expect(serverSawClose).toBe(true);
  });

  it('reads a huge (endless) response body only up to maxResponseBytes', async () => {
    let written = 0;
    const s = await server((req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      let open = true;
      req.socket.on('close', () => (open = false));
      const pump = () => {
        while (open && res.write(chunk)) written += chunk.length;
        if (open) res.once('drain', pump);
      };
      pump();
    });
    const o = await poster({ timeoutMs: 5000, maxResponseBytes: 64 * 1024 }).post(s.url, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: 200, errorClass: null });
    expect(o.durationMs).toBeLessThan(2000);
    expect(classifyOutcome(o)).toBe('delivered');
    // The receiver would stream forever; we stopped it. (What it managed to write is bounded by socket buffers.)
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('a body exactly at maxResponseBytes is read to the end and the socket kept', async () => {
    const s = await server((_req, res) => res.writeHead(200).end(Buffer.alloc(1024, 0x62)));
    const p = poster({ maxResponseBytes: 1024 });
    for (let i = 0; i < 3; i++) expect((await p.post(s.url, BODY, HEADERS)).statusCode).toBe(200);
    expect(s.connections()).toBe(1);
  });

  it('keep-alive: five posts reuse one connection', async () => {
    const s = await server((_req, res) => res.writeHead(200).end('ok'));
    const p = poster();
    for (let i = 0; i < 5; i++) {
      const o = await p.post(`${s.url}/hook`, BODY, HEADERS);
      expect(o.statusCode).toBe(200);
    }
    expect(s.requests).toHaveLength(5);
    expect(s.connections()).toBe(1);
  });

  it('keep-alive survives 4xx/5xx answers (their bodies are drained)', async () => {
    let n = 0;
    const s = await server((_req, res) => res.writeHead([500, 404, 200][n++ % 3]).end('some body'));
    const p = poster();
    const statuses: Array<number | null> = [];
    for (let i = 0; i < 3; i++) statuses.push((await p.post(s.url, BODY, HEADERS)).statusCode);
    expect(statuses).toEqual([500, 404, 200]);
    expect(s.connections()).toBe(1);
  });

  it('a pooled socket that the receiver dropped is retried once on a fresh connection', async () => {
    const seen = new WeakSet<net.Socket>();
    let dropped = 0;
    const s = await server((req, res) => {
      // Answer the first request on each connection; drop the connection on a second one without answering,
      // like a receiver whose keep-alive timer fired as our request arrived.
      if (seen.has(req.socket)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      seen.add(req.socket);
      res.writeHead(200).end('ok');
    });
    const p = poster();
    expect((await p.post(s.url, BODY, HEADERS)).statusCode).toBe(200);
    const second = await p.post(s.url, BODY, HEADERS);
    expect(second).toMatchObject({ statusCode: 200, errorClass: null });
    expect(dropped).toBe(1);
    expect(s.connections()).toBe(2);
  });

  it('never throws: a bad URL or an invalid header becomes an outcome', async () => {
    const p = poster();
    await expect(p.post('not a url', BODY, HEADERS)).resolves.toMatchObject({ statusCode: null, errorClass: 'forbidden_address' });
    await expect(p.post('ftp://127.0.0.1/x', BODY, HEADERS)).resolves.toMatchObject({ errorClass: 'forbidden_address' });
    const s = await server((_req, res) => res.writeHead(200).end());
    await expect(p.post(s.url, BODY, { 'x-bad': 'line\r\nbreak' })).resolves.toMatchObject({
      statusCode: null,
      errorClass: 'network',
    });
    expect(s.requests).toHaveLength(0);
  });
});

describe('WebhookPoster (allowPrivate: false): connect-time address guard', () => {
  let tcp: Awaited<ReturnType<typeof startTcpCounter>>;
  let p: WebhookPoster;
  beforeEach(async () => {
    tcp = await startTcpCounter();
    p = new WebhookPoster({ allowPrivate: false, timeoutMs: 2000 });
  });
  afterEach(async () => {
    p.close();
    await tcp.close();
  });

  it.each([
    ['an IPv4 literal', (port: number) => `https://127.0.0.1:${port}/hook`, /loopback/],
    ['a legacy IPv4 notation', (port: number) => `https://0x7f000001:${port}/hook`, /loopback/],
    // What a name resolves to is not told: the attempt log is the partner's to read.
    ['a hostname resolving to loopback', (port: number) => `https://localhost:${port}/hook`, /^localhost resolves to an address that is not public$/],
    ['an upper-case hostname resolving to loopback', (port: number) => `https://LocalHost:${port}/hook`, /resolves to an address that is not public$/],
  ])('refuses %s before connecting', async (_label, url, said) => {
    const o = await p.post(url(tcp.port), BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'forbidden_address' });
    expect(o.errorMessage).toMatch(said);
    expect(classifyOutcome(o)).toBe('retry');
    await new Promise((r) => setTimeout(r, 50));
    expect(tcp.connections()).toBe(0);
  });

  it('refuses an IPv6 loopback literal before connecting', async () => {
    const o = await p.post('https://[::1]:9/hook', BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'forbidden_address' });
  });

  it('refuses plain http when private URLs are not allowed', async () => {
    const o = await p.post(`http://127.0.0.1:${tcp.port}/hook`, BODY, HEADERS);
    expect(o).toMatchObject({ statusCode: null, errorClass: 'forbidden_address' });
    expect(o.errorMessage).toMatch(/https/);
    expect(tcp.connections()).toBe(0);
  });

  it('refuses credentials in the URL', async () => {
    const o = await p.post(`https://u:p@127.0.0.1:${tcp.port}/`, BODY, HEADERS);
    expect(o).toMatchObject({ errorClass: 'forbidden_address' });
    expect(tcp.connections()).toBe(0);
  });
});
