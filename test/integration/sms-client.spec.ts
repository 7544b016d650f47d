import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SmsClient } from '../../src/modules/notifications/sms-client';
import { findFreePort } from '../../scripts/chain/local-node';

/**
 * The SMS client against a real local HTTP server: what was refused, what may be tried again (nothing reached
 * the provider), and what is in doubt (the request went out, no answer came: never sent again, DESIGN §6).
 */
let server: Server;
let url: string;
let received = 0;
const connections: Socket[] = [];
let answer: (res: import('node:http').ServerResponse) => void = () => undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      answer(res);
    });
  });
  server.on('connection', (s) => connections.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const client = (apiUrl: string, timeoutMs = 500) => new SmsClient({ apiUrl, accountSid: 'AC1', authToken: 'token', from: '+15550000000' }, timeoutMs);
const message = { to: '+15551234567', body: 'Receipt', messageId: '<m1@test>' };
const send = (apiUrl = url, deadline = new AbortController().signal) => client(apiUrl).send(message, deadline);
const answering = (status: number, body: string) => (res: import('node:http').ServerResponse) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
};

it('2xx → sent, with the provider\'s sid', async () => {
  answer = answering(201, '{"sid":"SM42","status":"queued"}');
  expect(await send()).toEqual({ kind: 'sent', response: 'SM42' });
});

it.each([[400, 'refused'], [404, 'refused'], [429, 'transient'], [503, 'transient'], [507, 'transient']])('HTTP %i → %s', async (status, kind) => {
  answer = answering(status, '{"message":"no"}');
  expect(await send()).toMatchObject({ kind, error: `HTTP ${status}: {"message":"no"}` });
});

// The provider (or a gateway in front of it, having forwarded the request) failed while handling it: the
// message may be out, and a resend would be a second receipt.
it.each([500, 502, 504])('HTTP %i → in doubt, never sent again', async (status) => {
  answer = answering(status, '{"message":"upstream"}');
  expect(await send()).toEqual({ kind: 'in_doubt', error: `in doubt: HTTP ${status}: {"message":"upstream"}; not resent, to avoid a duplicate` });
});

// The status line came, then the body was cut or never finished: the provider has decided, and its status says
// what (a notifications hunt: every such answer read as in doubt, so a 503's or a 429's receipt was never sent
// and a 201's SMS was recorded as failed).
describe('the status came, then the body was cut or slow: the status decides', () => {
  const partly = (status: number, mode: 'cut' | 'slow') => (res: import('node:http').ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': '200' });
    res.write('{"sid":"SM1",');
    if (mode === 'cut') setTimeout(() => res.socket?.destroy(), 50);
  };
  it.each([
    [201, 'cut', 'sent'], [201, 'slow', 'sent'],
    [503, 'cut', 'transient'], [503, 'slow', 'transient'], [429, 'cut', 'transient'],
    [400, 'cut', 'refused'], [400, 'slow', 'refused'],
    [500, 'cut', 'in_doubt'],
  ] as const)('HTTP %i, body %s → %s', async (status, mode, kind) => {
    answer = partly(status, mode);
    const r = await send();
    expect(r.kind).toBe(kind);
    if (kind === 'sent') expect(r).toEqual({ kind: 'sent', response: `HTTP ${status}` });
    else expect(r).toMatchObject({ error: expect.stringContaining(`HTTP ${status}: {"sid":"SM1", (answer cut: `) });
  });
});

it('nothing listening → transient: the message never went out, it may be tried again', async () => {
  const r = await send(`http://127.0.0.1:${await findFreePort()}`);
  expect(r).toMatchObject({ kind: 'transient', error: expect.stringMatching(/ECONNREFUSED/) });
});

it('the request went out and no answer came within the timeout → in doubt, never sent again', async () => {
  const before = received;
  answer = () => undefined; // took it, answers nothing
  const r = await send();
  expect(received).toBe(before + 1);
  expect(r).toEqual({ kind: 'in_doubt', error: 'in doubt: no answer within 500 ms after the request went out; not resent, to avoid a duplicate' });
});

it('the connection dropped after the request went out → in doubt', async () => {
  answer = (res) => res.socket?.destroy();
  expect(await send()).toMatchObject({ kind: 'in_doubt' });
});

it('a deadline already passed → transient, nothing sent', async () => {
  const before = received;
  const r = await send(url, AbortSignal.abort());
  expect(r).toMatchObject({ kind: 'transient', error: expect.stringMatching(/deadline/) });
  expect(received).toBe(before);
});

// A provider (or its load balancer) closes idle connections. A client that kept the previous SMS's connection
// for the next one wrote that SMS into a connection already closed, which the provider never read: the reset
// came after the request was written, so it read as in doubt and the receipt was never sent (a review).
it('the provider closed the previous SMS\'s connection (its idle timeout) → the next SMS still reaches it', async () => {
  answer = answering(201, '{"sid":"SM7"}');
  const before = received;
  expect(await send()).toEqual({ kind: 'sent', response: 'SM7' });
  // The close is on its way; the client has not read it when it sends the next message.
  for (const s of connections) s.destroy();
  expect(await send()).toEqual({ kind: 'sent', response: 'SM7' });
  expect(received).toBe(before + 2);
});
