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
 * search and takes the next free one, reading the held amounts from the converted one to the first free one
 * only, whatever the statistics say (a window function there was planned as a scan and sort of every amount
 * the merchant holds, and creates slowed as they grew).
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

it('the first try takes a free converted amount with a generic plan; a held one goes on to the next free amount', async () => {
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
      WHERE name = 'request_insert_converted'`,
  );
  // Postgres tries five custom plans first; 15 first tries in all (8 free, 7 held).
  expect(plans).toEqual([{ name: 'request_insert_converted', generic: 10, custom: 5 }]);
});

it('the search for a free amount reads the held amounts from the converted one to the first free one, whatever the statistics say', async () => {
  // 5,000 open requests of the merchant spread above one price, the amount right after it free, and a run of 300
  // consecutive held amounts at another. A window function comparing each with the next was planned, with
  // statistics counting that many, as a scan and sort of every held amount from the price up; an anti-join
  // probe, with statistics that did not know the merchant's amounts, as a read of all of them per step.
  const spread = 5_000_000_000n;
  const run = 6_000_000_000n;
  await sql('ANALYZE payment_requests'); // before the rows below: statistics that do not know them
  await sql(
    `INSERT INTO payment_requests (id, partner_id, merchant_id, test_mode, idempotency_key, fiat_amount, fiat_currency, rate,
       amount, chain_id, token_address, recipient, payment_mode, source, expires_at, claim_until)
     SELECT gen_random_uuid(), $1, $2, true, 'held-' || amount, 100, $3, $4, amount, $5, $6, $7, 'pos', 'partner',
            now() + interval '1 hour', now() + interval '2 hours'
       FROM (SELECT $8::numeric + 10 * i AS amount FROM generate_series(0, 5000) AS i
             UNION ALL SELECT $9::numeric + i FROM generate_series(0, 299) AS i) AS held`,
    [template.partnerId, template.merchantId, template.fiatCurrency, template.rate, template.chainId.toString(),
      template.tokenAddress, template.recipient, spread.toString(), run.toString()],
  );
  const repo = new RequestsRepository(oneConnection.getRepository(PaymentRequestEntity));
  /** The amount a create at `price` gets, its sequential scans and the index entries it read (any index); rolled back. */
  const search = async (price: bigint) => {
    const rollBack = new Error('roll back');
    let result: { amount: bigint | undefined; seq: number; entries: number } | undefined;
    await oneConnection
      .transaction(async (tx) => {
        // This backend's reads so far (not yet flushed to the shared statistics), before and after.
        const reads = async () =>
          (await tx.query<Array<{ seq: number; entries: number }>>(
            `SELECT seq_scan::int AS seq,
                    (SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid))::int FROM pg_index i WHERE i.indrelid = t.relid) AS entries
               FROM pg_stat_xact_user_tables t WHERE t.relname = 'payment_requests'`,
          ))[0];
        const before = await reads();
        const made = await repo.insertOrFind({ ...template, id: randomUUID(), idempotencyKey: `walk-${randomUUID()}`, baseAmount: price }, tx);
        const after = await reads();
        result = { amount: made?.request.amount, seq: after.seq - before.seq, entries: after.entries - before.entries };
        throw rollBack;
      })
      .catch((e: unknown) => {
        if (e !== rollBack) throw e;
      });
    return result!;
  };
  // Each made and rolled back: the held amounts stay as seeded. A few entries for the uniqueness checks and the
  // probes, two per held amount walked.
  expect(await search(spread)).toEqual({ amount: spread + 1n, seq: 0, entries: expect.any(Number) });
  expect((await search(spread)).entries).toBeLessThan(20);
  const walked = await search(run);
  expect(walked).toMatchObject({ amount: run + 300n, seq: 0 });
  expect(walked.entries).toBeLessThan(2 * 300 + 20);
  // And with statistics that count them all.
  await sql('ANALYZE payment_requests');
  const analysed = await search(spread);
  expect(analysed).toMatchObject({ amount: spread + 1n, seq: 0 });
  expect(analysed.entries).toBeLessThan(20);
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
