import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
});

it('creates and reads a payment request end to end', async () => {
  const p = await createPartner(svc);
  const m = await createOnboardedMerchant(svc, p.testKey);
  const created = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: p.testKey,
    body: { account_id: m.id, fiat_amount_int: 1234, metadata: { order: '42' } },
  });
  expect(created.status).toBe(201);
  expect(created.body.amount).toBe('12340000');
  const got = await call(svc.adminUrl, 'GET', `/api/v1/requests/${created.body.request_id}`, { key: p.testKey });
  expect(got.status).toBe(200);
  expect(got.body).toEqual(created.body);
});
