import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { RequestsRepository } from '../../src/modules/requests/infrastructure/requests.repository';
import { createOnboardedMerchant, createPartner, type TestPartner } from '../factories/partners';
import { COPY_REQUEST_SQL, mustCreateRequest } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { testEnv } from '../support/test-env';

/*
 * Spec §4.3's `since` cursor under concurrent creation, as a poller meets it: writers insert requests as fast
 * as they can (autocommit, through the insert trigger that stamps created_at) while a reader pages with the
 * cursor, each page starting where the last one's last item was. Every row inserted meanwhile must be read
 * (a reviewer's probe found rows a cursor passed when the horizon was bounded by the time the lock views were
 * read instead of its statement's start).
 */
const WRITERS = 6;
const RUN_MS = 3000;
let svc: TestService;
let p: TestPartner;
let merchant: { id: string };

beforeAll(async () => {
  svc = await startService();
  p = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, p.testKey);
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await closeSql();
});

/** Inserts copies of `modelId` until `until`, each with its own key and amount; the ids it inserted. */
async function writer(modelId: string, n: number, until: number): Promise<string[]> {
  const c = new Client({ connectionString: testEnv().databaseUrl });
  await c.connect();
  const ids: string[] = [];
  try {
    for (let i = 0; Date.now() < until; i++) {
      const id = randomUUID();
      await c.query({ name: 'copy', text: COPY_REQUEST_SQL, values: [id, `horizon-${id}`, 1_000_000 * (n + 1) + i, modelId] });
      ids.push(id);
    }
  } finally {
    await c.end();
  }
  return ids;
}

it('a poller paging by since reads every row written while it pages', async () => {
  const model = await mustCreateRequest(svc, p.testKey, { account_id: merchant.id, fiat_amount_int: 777 });
  const repo = svc.app.get(RequestsRepository);
  const seen = new Set<string>();
  let cursor = new Date(Date.now() - 60_000).toISOString();
  const page = async () => {
    for (;;) {
      const { items, hasMore } = await repo.list({ partnerId: p.id, testMode: true, since: cursor, limit: 100, offset: 0 });
      for (const r of items) seen.add(r.id);
      if (items.length) cursor = items[items.length - 1].createdAt.toISOString();
      if (!hasMore) return;
    }
  };
  const until = Date.now() + RUN_MS;
  const writing = Promise.all(Array.from({ length: WRITERS }, (_, n) => writer(model.request_id, n, until)));
  let pages = 0;
  while (Date.now() < until) {
    await page();
    pages++;
  }
  const written = (await writing).flat();
  await page();

  expect(written.length).toBeGreaterThan(WRITERS * 20);
  expect(pages).toBeGreaterThan(10);
  const missed = written.filter((id) => !seen.has(id));
  expect(missed).toEqual([]);
  // The rows are the partner's and this run's only: nothing else to compare with.
  const [{ n }] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM payment_requests WHERE partner_id = $1`, [p.id]);
  expect(n).toBe(written.length + 1);
}, 60_000);
