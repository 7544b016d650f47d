import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../../src/database/data-source';
import { PaymentRequestEntity } from '../../src/modules/requests/infrastructure/payment-request.entity';
import { RequestsRepository, type NewRequest } from '../../src/modules/requests/infrastructure/requests.repository';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';

/*
 * The create's two INSERTs (RequestsRepository.insertOrFind) on one connection, so pg_prepared_statements shows
 * how Postgres plans them: the first try, at the converted amount, keeps a generic plan (the search's INSERT
 * was planned again on every create, which doubled Postgres' CPU per create); a held amount goes on to the
 * search and takes the next free one, planned for its amount every time (unnamed): as a prepared statement
 * Postgres gave it a generic plan that reads every amount the merchant holds, and creates slowed as they grew.
 */
let svc: TestService;
let oneConnection: DataSource;
let template: Omit<NewRequest, 'id' | 'idempotencyKey' | 'baseAmount'>;

beforeAll(async () => {
  svc = await startService();
  const partner = await createPartner(svc);
  const merchant = await createOnboardedMerchant(svc, partner.testKey);
  const seed = await mustCreateRequest(svc, partner.testKey, { account_id: merchant.id, fiat_amount_int: 100 });
  const [row] = await sql<{ chain_id: string; token_address: string; recipient: string; rate: string; fiat_currency: string }>(
    `SELECT chain_id, token_address, recipient, rate, fiat_currency FROM payment_requests WHERE id = $1`,
    [seed.request_id],
  );
  template = {
    partnerId: partner.id, merchantId: merchant.id, testMode: true, fiatAmount: 100, fiatCurrency: row.fiat_currency,
    rate: row.rate, chainId: BigInt(row.chain_id), tokenAddress: row.token_address, recipient: row.recipient, memo: null,
    paymentMode: 'pos', customerName: null, customerEmail: null, customerPhone: null, metadata: {}, source: 'partner',
    planId: null, periodIndex: null, apiKeyId: null, expiryMinutes: 60, graceMinutes: 60,
  };
  oneConnection = await createDataSource(svc.config.databaseUrl, 1).initialize();
}, 60000);

afterAll(async () => {
  await oneConnection?.destroy();
  await closeSql();
  await svc?.close();
});

it('the first try takes a free converted amount with a generic plan; a held one goes on to the next free amount, never by a generic plan', async () => {
  const repo = new RequestsRepository(oneConnection.getRepository(PaymentRequestEntity));
  const insert = (baseAmount: bigint) =>
    repo.insertOrFind({ ...template, id: randomUUID(), idempotencyKey: `cs-${randomUUID()}`, baseAmount }, oneConnection.manager);
  const free = Array.from({ length: 8 }, (_, i) => 7_000_000_000n + BigInt(i) * 1000n);
  for (const amount of free) expect((await insert(amount))?.request.amount).toBe(amount);
  // Held: the first of them, seven times (a search each, past the five custom plans Postgres tries first).
  const next = [];
  for (let i = 0; i < 7; i++) next.push((await insert(free[0]))?.request.amount);
  expect(next).toEqual(Array.from({ length: 7 }, (_, i) => free[0] + BigInt(i + 1)));

  const plans = await oneConnection.query<Array<{ name: string; generic: number; custom: number }>>(
    `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
      WHERE name LIKE 'request_insert%'`,
  );
  // The first try: five custom plans, then the generic one; 15 first tries in all (8 free, 7 held). The search
  // is no prepared statement, so it cannot keep a generic plan (one kept by a small table read every amount
  // the merchant holds, at every size since).
  expect(plans).toEqual([{ name: 'request_insert_converted', generic: 10, custom: 5 }]);
});

it('the search for a free amount reads the held amounts from the converted one up to the first free one, not all the merchant holds', async () => {
  // 5,000 open requests of the merchant above a held price, the amount right after it free: a walk reads two
  // index entries. The window function this replaced was planned, with statistics counting that many, as a scan
  // and sort of every held amount from the price up (and slowed every create that met a held amount as they grew).
  const price = 5_000_000_000n;
  await sql(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate,
       amount, chain_id, token_address, recipient, payment_mode, source, expires_at, claim_until)
     SELECT gen_random_uuid(), $1, $2, true, 'held-' || i, 100, $3, $4, $5::numeric + 10 * i, $6, $7, $8, 'pos', 'partner',
            now() + interval '1 hour', now() + interval '2 hours'
       FROM generate_series(0, 5000) AS i`,
    [template.partnerId, template.merchantId, template.fiatCurrency, template.rate, price.toString(), template.chainId.toString(),
      template.tokenAddress, template.recipient],
  );
  await sql('ANALYZE payment_requests');
  const repo = new RequestsRepository(oneConnection.getRepository(PaymentRequestEntity));
  const read = await oneConnection.transaction(async (tx) => {
    // This backend's reads of the table so far (counts not yet flushed to the shared statistics; no VACUUM has
    // run, so an index scan fetches each row it reads), before and after.
    const reads = async () =>
      (await tx.query<Array<{ seq: number; fetched: number }>>(
        `SELECT seq_scan::int AS seq, idx_tup_fetch::int AS fetched FROM pg_stat_xact_user_tables WHERE relname = 'payment_requests'`,
      ))[0];
    const before = await reads();
    const made = await repo.insertOrFind({ ...template, id: randomUUID(), idempotencyKey: `walk-${randomUUID()}`, baseAmount: price }, tx);
    expect(made?.request.amount).toBe(price + 1n);
    const after = await reads();
    return { seq: after.seq - before.seq, fetched: after.fetched - before.fetched };
  });
  expect(read.seq).toBe(0);
  expect(read.fetched).toBeLessThan(50);
});

it('twenty-five creates of one price racing on their own connections all get an amount: unique and contiguous', async () => {
  // Each search picks the first gap, and of the creates racing for it one wins: unserialized, the last of
  // twenty-five could lose up to 24 times, and past 21 searches a create fails (a 500).
  const many = await createDataSource(svc.config.databaseUrl, 25).initialize();
  try {
    const repo = new RequestsRepository(many.getRepository(PaymentRequestEntity));
    const price = 9_000_000_000n;
    // Every connection opened first, so that the creates race rather than queue for the pool.
    await Promise.all(Array.from({ length: 25 }, () => many.query('SELECT 1')));
    // The searches each create ran (a lost one runs another), counted on the way through.
    type Search = (em: unknown, merchantId: string, params: unknown[], inTurn: boolean) => Promise<unknown>;
    const proto = RequestsRepository.prototype as unknown as { searchAndInsert: Search };
    const original = proto.searchAndInsert;
    const searches = new Map<string, number>();
    jest.spyOn(proto, 'searchAndInsert').mockImplementation(function (this: unknown, ...args: Parameters<Search>) {
      const key = args[2][4] as string;
      searches.set(key, (searches.get(key) ?? 0) + 1);
      return original.apply(this, args);
    });
    const created = await Promise.all(Array.from({ length: 25 }, () =>
      repo.insertOrFind({ ...template, id: randomUUID(), idempotencyKey: `race-${randomUUID()}`, baseAmount: price }, many.manager)));
    const amounts = created.map((c) => c!.request.amount).sort((a, b) => (a < b ? -1 : 1));
    expect(amounts).toEqual(Array.from({ length: 25 }, (_, i) => price + BigInt(i)));
    // After one lost search the losers take turns, and lose again only to a create on its first search: at
    // most 2 searches each in 3 runs here, where without the turns one create needed 6 to 8.
    expect(Math.max(...searches.values())).toBeLessThanOrEqual(4);
  } finally {
    jest.restoreAllMocks();
    await many.destroy();
  }
}, 60000);
