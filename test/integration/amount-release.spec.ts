import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { RequestsRepository } from '../../src/modules/requests/infrastructure/requests.repository';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';

/*
 * A request's amount is held until its claim window has closed by a minute, by the chain's clock (no block
 * still to come can pay it) and by the database's. The database's stamps the next request's created_at, and
 * the pay rule takes blocks from 60 s before that: freed by the chain's clock alone, a chain running a few
 * seconds ahead let a payer's second transfer at the end of one request's window pay the next request of the
 * same price (a helper's hunt, 2026-11-27).
 */
let svc: TestService;
let p: TestPartner;
let merchantId: string;
let cursors: Array<{ chain_id: string; token_address: string; last_block_time: Date | null }>;

beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  merchantId = (await createOnboardedMerchant(svc, p.testKey)).id;
  cursors = await sql(`SELECT chain_id, token_address, last_block_time FROM chain_cursors`);
});
afterAll(async () => {
  for (const c of cursors) await sql(`UPDATE chain_cursors SET last_block_time = $3 WHERE chain_id = $1 AND token_address = $2`, [c.chain_id, c.token_address, c.last_block_time]);
  await svc?.close();
  await closeSql();
});

it("is not freed while the database's clock is within a minute of the window's end, however far the chain's clock is ahead", async () => {
  const r1 = await mustCreateRequest(svc, p.testKey, { account_id: merchantId, fiat_amount_int: 4321 });
  const [asset] = await sql(`SELECT chain_id, token_address FROM payment_requests WHERE id = $1`, [r1.request_id]);
  // The chain's clock an hour ahead: by it alone, the window closed long ago.
  await sql(
    `INSERT INTO chain_cursors (chain_id, token_address, last_block, last_block_time) VALUES ($1, $2, 0, now() + interval '1 hour')
     ON CONFLICT (chain_id, token_address) DO UPDATE SET last_block_time = now() + interval '1 hour'`,
    [asset.chain_id, asset.token_address],
  );
  const locked = async () => (await sql(`SELECT amount_locked FROM payment_requests WHERE id = $1`, [r1.request_id]))[0].amount_locked;
  const release = () => svc.app.get(RequestsRepository).releaseClosedAmounts();

  // Closed 30 s ago by the database's clock: held; the same price now gets another amount.
  await sql(`UPDATE payment_requests SET claim_until = now() - interval '30 seconds', expires_at = now() - interval '90 minutes' WHERE id = $1`, [r1.request_id]);
  await release();
  expect(await locked()).toBe(true);
  const r2 = await mustCreateRequest(svc, p.testKey, { account_id: merchantId, fiat_amount_int: 4321 });
  expect(r2.amount).not.toBe(r1.amount);

  // Closed 61 s ago: freed.
  await sql(`UPDATE payment_requests SET claim_until = now() - interval '61 seconds' WHERE id = $1`, [r1.request_id]);
  await release();
  expect(await locked()).toBe(false);
});
