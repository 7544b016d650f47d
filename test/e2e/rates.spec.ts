import { createServer, type Server } from 'node:http';
import { createOnboardedMerchant, admin, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';

/** Rates: the HTTP JSON source, the manual refresh limit of spec §8, and the snapshot on each request. */
let source: Server;
let sourceRates: Record<string, unknown> = { usd: 1, eur: '0.92' };
let sourceUrl: string;
let svc: TestService;

beforeAll(async () => {
  source = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ data: { rates: sourceRates } }));
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceUrl = `http://127.0.0.1:${(source.address() as { port: number }).port}/rates.json`;
  svc = await startService({ env: { RATES_SOURCE_URL: sourceUrl, RATES_SOURCE_PATH: 'data.rates' } });
});

afterAll(async () => {
  await svc?.close();
  await new Promise((r) => source.close(r));
});

it('refreshes from the HTTP source, at most once a minute per partner, and requests keep the rate they used', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  sourceRates = { usd: '1.25', eur: '0.92' };
  // Wait for a fresh clock minute if this one is about to end, so both refreshes fall in one window.
  if (60000 - (Date.now() % 60000) < 5000) await new Promise((r) => setTimeout(r, 6000));
  const first = await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`);
  expect(first.status).toBe(200);
  expect(first.body.rates).toEqual(expect.arrayContaining([expect.objectContaining({ currency: 'usd', rate: '1.25', source: expect.stringMatching(/^http:127\.0\.0\.1/) })]));
  const second = await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`);
  expect(second.status).toBe(429);
  expect(second.body).toEqual({ ok: false, error: 'rate_limited' });
  // Another partner has its own allowance.
  const other = await createPartner(svc);
  expect((await admin(svc, 'POST', `/partners/${other.id}/rates/refresh`)).status).toBe(200);

  // 10.00 usd at 1.25 usd per token = 8 tokens (6 decimals).
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 1000 } });
  expect(r.body.amount).toBe('8000000');

  sourceRates = { usd: '2', eur: '0.92' };
  expect((await admin(svc, 'POST', `/partners/${other.id}/rates/refresh`)).status).toBe(429);
  const third = await createPartner(svc);
  expect((await admin(svc, 'POST', `/partners/${third.id}/rates/refresh`)).status).toBe(200);
  const again = await call(svc.publicUrl, 'GET', `/api/v1/requests/${r.body.request_id}`, { key: p.testKey });
  expect(again.body.amount).toBe('8000000');
  const listed = await admin(svc, 'GET', '/rates');
  expect(listed.body.rates.find((x: { currency: string }) => x.currency === 'usd').rate).toBe('2');
});

it('refuses a malformed source answer and keeps the rates it had', async () => {
  const p = await createPartner(svc);
  sourceRates = { usd: 'lots' };
  const res = await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`);
  expect(res.status).toBe(502);
  expect(res.body.error).toBe('rate_source_unavailable');
  const listed = await admin(svc, 'GET', '/rates');
  expect(listed.body.rates.find((x: { currency: string }) => x.currency === 'usd').rate).toBe('2');
});

it('a currency the source no longer quotes loses its rate: its requests are refused, not priced at the last rate seen', async () => {
  const p = await createPartner(svc);
  sourceRates = { usd: '1', eur: '0.92' };
  expect((await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`)).status).toBe(200);
  const m = await createOnboardedMerchant(svc, p.testKey, { display_currency: 'eur' });
  const priced = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } });
  expect(priced.status).toBe(201);

  // The source stops quoting eur (a peg broke, a market closed): 0.92 is no longer anybody's rate.
  sourceRates = { usd: '1' };
  const q = await createPartner(svc);
  const refreshed = await admin(svc, 'POST', `/partners/${q.id}/rates/refresh`);
  expect(refreshed.status).toBe(200);
  expect(refreshed.body.rates.map((x: { currency: string }) => x.currency)).toEqual(['usd']);
  expect((await admin(svc, 'GET', '/rates')).body.rates.map((x: { currency: string }) => x.currency)).toEqual(['usd']);
  const refused = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ ok: false, error: 'unsupported_currency', expected_fiat_code: 'eur' });
  // The request made before keeps the rate it used.
  expect((await call(svc.publicUrl, 'GET', `/api/v1/requests/${priced.body.request_id}`, { key: p.testKey })).body.amount).toBe('1000000');

  // Quoted again: priced again.
  sourceRates = { usd: '1', eur: '0.92' };
  const r = await createPartner(svc);
  expect((await admin(svc, 'POST', `/partners/${r.id}/rates/refresh`)).status).toBe(200);
  expect((await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } })).status).toBe(201);
});
