import net from 'node:net';
import type { Duplex } from 'node:stream';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { call } from '../support/http';
import { startService, type TestService } from '../support/app';
import { closeSql } from '../support/db';

/*
 * Requests Node's HTTP parser refuses never reach Express (a header with a NUL or a control character, headers
 * over 16 KB), nor does an Expect header Node does not know: Node answered them with a bare status line and no
 * body (a helper's fuzzing). They are answered in the envelope, with Node's status, on both listeners.
 */
let svc: TestService;
let p: TestPartner;

beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
}, 60000);

afterAll(async () => {
  await svc?.close();
  await closeSql();
});

interface RawReply {
  status: number;
  head: string;
  body: string;
}

/**
 * Writes the bytes as they are (no client would send them) and reads until the server closes. The socket is
 * half-closed after them unless `keepWriting` (Node then drops a request still being answered: such a request
 * must say `Connection: close` instead).
 */
function raw(baseUrl: string, bytes: Buffer, keepWriting = false): Promise<RawReply> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? -1), head: text.slice(0, at), body: text.slice(at + 4) });
    });
    if (keepWriting) s.write(bytes);
    else s.end(bytes);
  });
}

const create = (baseUrl: string, extraHeader: Buffer) =>
  raw(baseUrl, Buffer.concat([
    Buffer.from(`POST /api/v1/requests/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n`),
    extraHeader,
    Buffer.from('\r\n{}'),
  ]));

it.each([
  ['a header with a NUL byte', Buffer.from('Idempotency-Key: abc\u0000def\r\n', 'latin1'), 400, 'invalid_request'],
  ['a header with a control character', Buffer.from('Idempotency-Key: a\u0001b\r\n', 'latin1'), 400, 'invalid_request'],
  ['headers over 16 KB', Buffer.from(`Idempotency-Key: ${'A'.repeat(20 * 1024)}\r\n`), 431, 'request_header_fields_too_large'],
  ['an Expect header other than 100-continue', Buffer.from('Expect: weird\r\n'), 417, 'expectation_failed'],
])("%s → Node's status, in the envelope, on both listeners", async (_label, header, status, error) => {
  for (const url of [svc.publicUrl, svc.adminUrl]) {
    const r = await create(url, header);
    expect(r.status).toBe(status);
    expect(r.head).toMatch(/\r\ncontent-type: application\/json/i);
    expect(JSON.parse(r.body)).toEqual({ ok: false, error });
  }
});

it('CONNECT (no path: this is no proxy) → 404 not_found in the envelope and the connection closed, on both listeners (Node dropped it unanswered)', async () => {
  for (const url of [svc.publicUrl, svc.adminUrl]) {
    const r = await raw(url, Buffer.from('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), true);
    expect(r.status).toBe(404);
    expect(r.head).toMatch(/\r\ncontent-type: application\/json/i);
    expect(r.head).toMatch(/\r\nconnection: close/i);
    expect(JSON.parse(r.body)).toEqual({ ok: false, error: 'not_found' });
  }
});

it('CONNECTs whose clients reset at once leave the service answering', async () => {
  const u = new URL(svc.publicUrl);
  for (let i = 0; i < 50; i++) {
    await new Promise<void>((resolve) => {
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write('CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n', () => s.resetAndDestroy());
      });
      s.on('error', () => resolve());
      s.on('close', () => resolve());
    });
  }
  expect((await call(svc.publicUrl, 'GET', '/api/v1/requests?limit=1', { key: p.testKey })).status).toBe(200);
});

it('a CONNECT pipelined behind a request still being answered: its 404 is not read as that request\'s answer', async () => {
  const good = `GET /api/v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\n\r\n`;
  const r = await raw(svc.publicUrl, Buffer.from(`${good}CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n`));
  // The good request's answer, or none (the connection closed): never the CONNECT's 404 in its place.
  expect([200, -1]).toContain(r.status);
});

it.each([
  ['a CONNECT client', 'connect', 'CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\nContent-Length: 3\r\n\r\nabc'],
  ['a client whose request the parser refused', 'clientError', 'GET / HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n'],
] as const)('%s that never closes its side (nor reads on) does not hold the socket open: it held it for good, and shutdown waited on it', async (_label, event, bytes) => {
  for (const url of [svc.publicUrl, svc.adminUrl]) {
    const server = url === svc.publicUrl ? svc.publicServer! : svc.adminServer!;
    const serverSide = new Promise<Duplex>((resolve) => server.once(event, (_first: unknown, socket: Duplex) => resolve(socket)));
    const u = new URL(url);
    const s = net.connect({ port: Number(u.port), host: u.hostname, allowHalfOpen: true });
    s.on('error', () => undefined);
    s.write(bytes);
    const socket = await serverSide;
    await new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));
    s.destroy();
  }
}, 30000);

it('a bad request pipelined behind a good one is not answered as if it were the good one', async () => {
  const good = `GET /api/v1/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\n\r\n`;
  const bad = 'GET /api/v1/requests HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n';
  const r = await raw(svc.publicUrl, Buffer.concat([Buffer.from(good), Buffer.from(bad, 'latin1')]));
  // The good request's answer, or none (the connection closed): never a 400 in its place.
  expect([200, -1]).toContain(r.status);
});

it('chunk extensions over Node\'s limit in the request\'s own body → 413 in the envelope', async () => {
  const head = `POST /api/v1/requests/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const r = await raw(svc.publicUrl, Buffer.from(`${head}2;${'e'.repeat(20 * 1024)}\r\n{}\r\n0\r\n\r\n`));
  expect(r.status).toBe(413);
  expect(JSON.parse(r.body)).toEqual({ ok: false, error: 'payload_too_large' });
});

describe('an empty chunked body is no body (DESIGN §8: bodiless calls are unaffected; it was 415, and the cancel did nothing)', () => {
  let merchantId: string;
  beforeAll(async () => {
    merchantId = (await createOnboardedMerchant(svc, p.testKey)).id;
  });
  const cancel = (id: string, headers: string, body: string) =>
    raw(
      svc.publicUrl,
      Buffer.from(`POST /api/v1/requests/${id}/cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${p.testKey}\r\n${headers}Transfer-Encoding: chunked\r\n\r\n${body}`),
      true,
    );
  const statusOf = async (id: string) => (await call(svc.publicUrl, 'GET', `/api/v1/requests/${id}`, { key: p.testKey })).body.status;

  it.each([
    ['no content type', ''],
    ['a text/plain content type', 'Content-Type: text/plain\r\n'],
  ])('POST cancel, %s, chunked with no bytes → 200 voided', async (_label, headers) => {
    const { request_id: id } = await mustCreateRequest(svc, p.testKey, { account_id: merchantId, fiat_amount_int: 100 });
    const r = await cancel(id, headers, '0\r\n\r\n');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ ok: true, request_id: id, status: 'voided' });
  });

  it('POST cancel, no content type, chunked with a byte → 415 as before, the request untouched', async () => {
    const { request_id: id } = await mustCreateRequest(svc, p.testKey, { account_id: merchantId, fiat_amount_int: 100 });
    const r = await cancel(id, '', '1\r\nx\r\n0\r\n\r\n');
    expect(r.status).toBe(415);
    expect(JSON.parse(r.body)).toEqual({ ok: false, error: 'unsupported_media_type' });
    expect(await statusOf(id)).toBe('requested');
  });

  it('a large chunked body refused with 415 leaves the connection working: a request pipelined behind it is answered', async () => {
    const big = 'y'.repeat(200_000);
    const refused = `POST /api/v1/requests/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    const next = `GET /api/v1/requests?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${p.testKey}\r\nConnection: close\r\n\r\n`;
    const r = await raw(svc.publicUrl, Buffer.from(refused + next), true);
    expect(r.status).toBe(415);
    expect(r.body).toMatch(/HTTP\/1\.1 200 OK/);
  });
});
