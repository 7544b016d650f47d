import type { RateProvider } from '../../src/modules/rates/rate-provider';
import { createOnboardedMerchant, createPartner, admin } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';

/** Issue 6 item 8: the rate provider replaced through dependency injection (docs/extending.md). */
class FixedRateProvider implements RateProvider {
  readonly name = 'fixed-test-source';
  calls = 0;
  constructor(private readonly rates: Record<string, string>) {}
  async fetchRates(): Promise<Record<string, string>> {
    this.calls++;
    return this.rates;
  }
}

const provider = new FixedRateProvider({ usd: '0.8', chf: '0.9' });
let svc: TestService;

beforeAll(async () => {
  // RATES names only usd: chf can only come from the provider.
  svc = await startService({ env: { RATES: 'usd:1' }, rates: { provider } });
});

afterAll(async () => {
  await svc?.close();
});

it('prices requests with the provider given by dependency injection', async () => {
  const p = await createPartner(svc);
  const before = provider.calls;
  expect((await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`)).status).toBe(200);
  expect(provider.calls).toBe(before + 1);
  const listed = await admin(svc, 'GET', '/rates');
  expect(listed.body.rates).toEqual(expect.arrayContaining([
    expect.objectContaining({ currency: 'usd', rate: '0.8', source: 'fixed-test-source' }),
    expect.objectContaining({ currency: 'chf', rate: '0.9', source: 'fixed-test-source' }),
  ]));
  const m = await createOnboardedMerchant(svc, p.testKey, { display_currency: 'CHF' });
  // 9.00 chf at 0.9 chf per token = 10 tokens of 6 decimals.
  const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 900 } });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ amount: '10000000', fiat_currency: 'chf' });
});
