import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RateRepository } from '../../src/modules/rates/rate.repository';
import { RatesService } from '../../src/modules/rates/rates.service';
import { signInDashboard } from '../factories/dashboard';
import { createOnboardedMerchant, admin, createPartner } from '../factories/partners';
import { idemKey } from '../factories/requests';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { call } from '../support/http';
import { PortalClient } from '../support/portal-client';
import { sample } from '../support/metrics';
import { waitFor } from '../support/wait';

/** Rates: the HTTP JSON source, the manual refresh limit of spec §8, and the snapshot on each request. */
let source: Server;
let sourceRates: Record<string, unknown> = { usd: 1, eur: '0.92' };
/** The source is down: every fetch gets a 503. */
let sourceDown = false;
let sourceUrl: string;
let svc: TestService;

beforeAll(async () => {
  source = createServer((_req, res) => {
    if (sourceDown) {
      res.statusCode = 503;
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ data: { rates: sourceRates } }));
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceUrl = `http://127.0.0.1:${(source.address() as { port: number }).port}/rates.json`;
  svc = await startService({ env: { RATES_SOURCE_URL: sourceUrl, RATES_SOURCE_PATH: 'data.rates', RATES_MAX_AGE_MS: String(MAX_AGE_MS) } });
});

afterAll(async () => {
  await svc?.close();
  await new Promise((r) => source.close(r));
  await closeSql();
});

const MAX_AGE_MS = 600000;

/**
 * Makes the stored rates (every one, or those of `currencies`) `age` old (a Postgres interval), as if they had
 * been fetched that long ago, and waits until `on` holds the aged rows in memory (the change feed tells it to
 * reload, as a refresh would).
 */
async function ageRates(on: TestService, age: string, currencies?: string[]): Promise<void> {
  const rows = await sql<{ currency: string; updated_at: Date }>(
    `UPDATE rates SET updated_at = now() - $1::interval WHERE $2::text[] IS NULL OR currency = ANY($2::text[]) RETURNING currency, updated_at`,
    [age, currencies ?? null],
  );
  await sql(`SELECT pg_notify('prs_changes', $1)`, [JSON.stringify({ topic: 'rates', key: '1' })]);
  const want = Object.fromEntries(rows.map((r) => [r.currency, r.updated_at.toISOString()]));
  await waitFor(async () => {
    const shown = (await admin(on, 'GET', '/rates')).body.rates as Array<{ currency: string; updated_at: string }>;
    return rows.every((r) => shown.some((x) => x.currency === r.currency && x.updated_at === want[r.currency]));
  });
}

const requestsOf = async (merchantId: string) => Number((await sql(`SELECT count(*) AS n FROM payment_requests WHERE merchant_id = $1`, [merchantId]))[0].n);
const plansOf = async (merchantId: string) => Number((await sql(`SELECT count(*) AS n FROM plans WHERE merchant_id = $1`, [merchantId]))[0].n);

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

it('an answer that lacks a currency leaves its rate and fetch time alone: it prices until RATES_MAX_AGE_MS ages it out', async () => {
  const p = await createPartner(svc);
  sourceRates = { usd: '1', eur: '0.92' };
  expect((await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`)).status).toBe(200);
  const m = await createOnboardedMerchant(svc, p.testKey, { display_currency: 'eur' });
  const u = await createOnboardedMerchant(svc, p.testKey);
  const eurCreate = () => call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } });
  const eurRow = async () => (await sql<{ rate: string; updated_at: Date }>(`SELECT rate, updated_at FROM rates WHERE currency = 'eur'`))[0];
  const fetched = await eurRow();

  // The source hiccups: its answer lacks eur. usd is stored; eur keeps its rate and the time it was fetched.
  sourceRates = { usd: '1.25' };
  const q = await createPartner(svc);
  const refreshed = await admin(svc, 'POST', `/partners/${q.id}/rates/refresh`);
  expect(refreshed.status).toBe(200);
  // Other files' services stored more currencies (static RATES) in this run's database: only these two matter here.
  const listed = refreshed.body.rates.map((x: { currency: string }) => x.currency).filter((c: string) => c === 'eur' || c === 'usd');
  expect(listed).toEqual(['eur', 'usd']);
  expect(await eurRow()).toEqual(fetched);
  const priced = await eurCreate();
  expect(priced.status).toBe(201);
  expect(priced.body.amount).toBe('1000000');

  // The source keeps leaving eur out (it dropped it): eur is refused once its last fetch is past the max age,
  // while usd, answered at every refresh, prices on.
  await ageRates(svc, `${MAX_AGE_MS / 1000 + 60} seconds`, ['eur']);
  const r = await createPartner(svc);
  expect((await admin(svc, 'POST', `/partners/${r.id}/rates/refresh`)).status).toBe(200);
  const refused = await eurCreate();
  expect(refused.status).toBe(502);
  expect(refused.body.error).toBe('rate_source_unavailable');
  const usd = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: u.id, fiat_amount_int: 125 } });
  expect(usd.status).toBe(201);
  expect(usd.body.amount).toBe('1000000');
  // /metrics: eur's own age is past the max; the source's (its newest answer) is fresh.
  const metrics = (await call(svc.adminUrl, 'GET', '/metrics')).text;
  const source = `http:${new URL(sourceUrl).host}`;
  expect(sample(metrics, 'prs_rate_age_seconds', { currency: 'eur', source })).toBeGreaterThan(MAX_AGE_MS / 1000);
  expect(sample(metrics, 'prs_rate_age_seconds', { currency: 'usd', source })).toBeLessThan(60);
  expect(sample(metrics, 'prs_rate_source_age_seconds', { source })).toBeLessThan(60);
  // The request made before keeps the rate it used.
  expect((await call(svc.publicUrl, 'GET', `/api/v1/requests/${priced.body.request_id}`, { key: p.testKey })).body.amount).toBe('1000000');

  // Quoted again: priced again.
  sourceRates = { usd: '1', eur: '0.92' };
  const t = await createPartner(svc);
  expect((await admin(svc, 'POST', `/partners/${t.id}/rates/refresh`)).status).toBe(200);
  expect((await eurCreate()).status).toBe(201);
});

it("the partner portal shows where rates come from without the source's host (rates page and audit log)", async () => {
  const p = await createPartner(svc);
  sourceRates = { usd: '1', eur: '0.92' };
  // An operator's refresh for this partner: the admin API names the source, and so does the stored audit row.
  const refreshed = await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`);
  expect(refreshed.status).toBe(200);
  const host = new URL(sourceUrl).host;
  expect(refreshed.body.rates[0].source).toBe(`http:${host}`);
  const email = `rates-${Date.now().toString(36)}@example.com`;
  expect((await admin(svc, 'POST', `/partners/${p.id}/users`, { email, password: 'correct horse battery staple', role: 'admin' })).status).toBe(201);
  const portal = new PortalClient(svc.publicUrl);
  expect((await portal.signIn(email, 'correct horse battery staple')).status).toBe(303);
  const rates = await portal.get('/portal/rates');
  expect(rates.status).toBe(200);
  expect(rates.text).toContain('data-currency="eur"');
  expect(rates.text).not.toContain(host);
  expect(rates.text).not.toContain('127.0.0.1');
  const audit = await portal.get('/portal/audit');
  expect(audit.status).toBe(200);
  expect(audit.text).toContain('rates.refreshed');
  expect(audit.text).not.toContain(host);
});

describe('RATES_MAX_AGE_MS: a rate from a remote source older than the max age prices nothing', () => {
  it('every create path refuses it (502 rate_source_unavailable naming the currency, never the source), changing nothing, until a refresh succeeds', async () => {
    sourceDown = false;
    sourceRates = { usd: '1', eur: '0.92' };
    const p = await createPartner(svc);
    expect((await admin(svc, 'POST', `/partners/${p.id}/rates/refresh`)).status).toBe(200);
    const m = await createOnboardedMerchant(svc, p.testKey);
    const dash = await signInDashboard(svc, m.wallet);
    const handle = `fresh-${Date.now().toString(36)}`;
    expect((await dash.call('PUT', '/handle', { body: { handle } })).status).toBe(200);
    const key = idemKey();
    const create = (body: Record<string, unknown> = {}) =>
      call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 500, ...body } });
    const made = await create({ idempotency_key: key });
    expect(made.status).toBe(201);

    // Younger than the max age: still prices, and /metrics shows the age operators alert on.
    await ageRates(svc, `${MAX_AGE_MS / 1000 - 60} seconds`);
    expect((await create()).status).toBe(201);
    const metrics = (await call(svc.adminUrl, 'GET', '/metrics')).text;
    const age = sample(metrics, 'prs_rate_age_seconds', { currency: 'usd', source: `http:${new URL(sourceUrl).host}` });
    expect(age).toBeGreaterThanOrEqual(MAX_AGE_MS / 1000 - 60);
    expect(age).toBeLessThan(MAX_AGE_MS / 1000);

    // The source goes down, so refreshes fail and the stored rates grow older than the max age.
    sourceDown = true;
    const q = await createPartner(svc);
    // The admin API is an operator's surface: it names the source that failed.
    const failed = await admin(svc, 'POST', `/partners/${q.id}/rates/refresh`);
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ ok: false, error: 'rate_source_unavailable', source: `http:${new URL(sourceUrl).host}` });
    await ageRates(svc, `${MAX_AGE_MS / 1000 + 60} seconds`);
    const requestsBefore = await requestsOf(m.id);
    const plansBefore = await plansOf(m.id);
    // Partners, merchants and payers learn which currency cannot be priced, never the source's (internal) host.
    const refusal = { ok: false, error: 'rate_source_unavailable', fiat_currency: 'usd', message: 'exchange rates for USD are unavailable; try again later' };

    const warned = async <T>(work: () => Promise<T>): Promise<[T, string[]]> => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      try {
        return [await work(), warn.mock.calls.map((c) => String(c[0]))];
      } finally {
        warn.mockRestore();
      }
    };
    // An idempotent replay still returns the request it made (DESIGN §3: the replay wins over later checks),
    // and the log says nothing of a refusal: nothing was refused.
    const [replay, replayLines] = await warned(() => create({ idempotency_key: key }));
    expect(replay.status).toBe(200);
    expect(replay.body.request_id).toBe(made.body.request_id);
    expect(replayLines.filter((l) => l.startsWith('refusing creates'))).toEqual([]);

    const [partner, lines] = await warned(() => create({ idempotency_key: idemKey() }));
    expect(partner.status).toBe(502);
    expect(partner.body).toEqual(refusal);
    expect(partner.text).not.toContain(new URL(sourceUrl).host);
    // The operator's log line names the source.
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^refusing creates in usd: .*http:${new URL(sourceUrl).host.replace(/\./g, '\\.')}`)));
    // The partner API is served on the admin listener too, with the same answer.
    const onAdmin = await call(svc.adminUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 500 } });
    expect(onAdmin.status).toBe(502);
    expect(onAdmin.body).toEqual(refusal);
    const dashboard = await dash.call('POST', '/requests', { body: { fiat_amount_int: 500 } });
    expect(dashboard.status).toBe(502);
    expect(dashboard.body).toEqual(refusal);
    const handlePage = await call(svc.publicUrl, 'POST', `/m/api/${handle}/requests`, { body: { fiat_amount_int: 500 } });
    expect(handlePage.status).toBe(502);
    expect(handlePage.body).toEqual(refusal);
    expect(handlePage.text).not.toContain(new URL(sourceUrl).host);
    // A plan starting now charges its first period at once: the plan is not kept without it.
    const plan = await dash.call('POST', '/plans', { body: { title: 'Gym', fiat_amount_int: 2500, interval: 'month' } });
    expect(plan.status).toBe(502);
    expect(plan.body).toEqual(refusal);
    expect(await requestsOf(m.id)).toBe(requestsBefore);
    expect(await plansOf(m.id)).toBe(plansBefore);

    // The source is back: a refresh (the worker's job, or a manual one) makes the rates current again.
    sourceDown = false;
    const r = await createPartner(svc);
    expect((await admin(svc, 'POST', `/partners/${r.id}/rates/refresh`)).status).toBe(200);
    expect((await create()).status).toBe(201);
    expect((await dash.call('POST', '/requests', { body: { fiat_amount_int: 500 } })).status).toBe(201);
  });
});

describe('RATES_MAX_AGE_MS and static RATES', () => {
  let st: TestService;
  beforeAll(async () => {
    st = await startService({ env: { RATES_MAX_AGE_MS: String(MAX_AGE_MS) } });
  });
  afterAll(async () => {
    await st?.close();
  });

  it('static rates never age: RATES is the configuration itself', async () => {
    const p = await createPartner(st);
    const m = await createOnboardedMerchant(st, p.testKey, { display_currency: 'eur' });
    await ageRates(st, '30 days');
    expect((await call(st.adminUrl, 'GET', '/metrics')).text).not.toMatch(/^prs_rate_age_seconds\{/m);
    const r = await call(st.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } });
    expect(r.status).toBe(201);
    expect(r.body.amount).toBe('1000000');
  });

  it('the same static rows age on an instance configured with a remote source (left from before the switch)', async () => {
    const p = await createPartner(svc);
    const m = await createOnboardedMerchant(svc, p.testKey);
    await ageRates(svc, `${MAX_AGE_MS / 1000 + 60} seconds`);
    expect((await admin(svc, 'GET', '/rates')).body.rates.every((x: { source: string }) => x.source === 'static')).toBe(true);
    const r = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', { key: p.testKey, body: { account_id: m.id, fiat_amount_int: 92 } });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({ ok: false, error: 'rate_source_unavailable', fiat_currency: 'usd', message: 'exchange rates for USD are unavailable; try again later' });
  });
});

describe('two refreshes at once', () => {
  /**
   * A scheduled refresh and a partner's manual one on another instance can overlap, and the answer fetched
   * later may reach Postgres first. Each currency keeps the rate of the answer that arrived last, whichever
   * transaction commits first: an older answer never replaces a newer one.
   */
  it('an answer that arrived earlier never overwrites one that arrived later, whichever commits first', async () => {
    const repo = svc.app.get(RateRepository, { strict: false });
    const db = svc.app.get(DataSource, { strict: false });
    const before = await sql<{ currency: string; rate: string; source: string }>(`SELECT currency, rate, source FROM rates`);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let newerWrote!: () => void;
    const wrote = new Promise<void>((r) => (newerWrote = r));
    const older = performance.now() - 5000;
    try {
      // The newer answer (arrived now) writes first and holds its transaction open…
      const newer = db.transaction(async (em) => {
        await repo.store(em, { usd: '1.5', chf: '0.88' }, 'test:newer', { answeredAt: performance.now(), complete: false });
        newerWrote();
        await held;
      });
      await wrote;
      // …while an answer that arrived 5 s earlier (a slow refresh elsewhere) comes to be stored.
      const late = db.transaction((em) => repo.store(em, { usd: '1.4', chf: '0.87', gbp: '0.79' }, 'test:older', { answeredAt: older, complete: false }));
      await waitFor(async () => (await sql(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`))[0].n > 0, 5000, 20).catch(() => undefined);
      release();
      await Promise.all([newer, late]);
      const rows = await sql<{ currency: string; rate: string; source: string }>(`SELECT currency, rate, source FROM rates WHERE currency IN ('usd', 'chf', 'gbp') ORDER BY currency`);
      // gbp only the older answer quoted: it is the newest rate of gbp there is.
      expect(rows).toEqual([
        { currency: 'chf', rate: '0.88', source: 'test:newer' },
        { currency: 'gbp', rate: '0.79', source: 'test:older' },
        { currency: 'usd', rate: '1.5', source: 'test:newer' },
      ]);
      // Stored after the newer one committed, the older answer changes nothing either.
      await db.transaction((em) => repo.store(em, { usd: '1.3' }, 'test:oldest', { answeredAt: older - 1000, complete: false }));
      expect((await sql<{ rate: string }>(`SELECT rate FROM rates WHERE currency = 'usd'`))[0].rate).toBe('1.5');
    } finally {
      release();
      await db.transaction(async (em) => {
        await em.query(`DELETE FROM rates`);
        for (const r of before) await em.query(`INSERT INTO rates (currency, rate, source, updated_at) VALUES ($1, $2, $3, now())`, [r.currency, r.rate, r.source]);
      });
    }
  });

  /**
   * An instance reads the stored rates on a timer, on another instance's announcement and after its own
   * refresh; the reads overlap. One that read before a refresh committed and answered after a newer read had
   * been applied put the superseded rate back (a multi-instance hunt: creates priced at the old rate for up
   * to 10 s after the refresh had answered).
   */
  it('reads asked for while one is under way share a single read after it: never two at once, never one per caller', async () => {
    // The timer, every instance's announcements and the instance's own refreshes all ask; a burst of them while
    // Postgres is slow would otherwise queue a read each, or run them side by side out of order.
    const rates = svc.app.get(RatesService, { strict: false });
    const repo = svc.app.get(RateRepository, { strict: false });
    const reload = () => (rates as unknown as { reload(): Promise<void> }).reload();
    const real = repo.allWithAge.bind(repo);
    let running = 0;
    let most = 0;
    let started!: () => void;
    const first = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const reads = jest.spyOn(repo, 'allWithAge').mockImplementation(async () => {
      most = Math.max(most, ++running);
      try {
        const rows = await real();
        if (reads.mock.calls.length === 1) {
          started();
          await held;
        }
        return rows;
      } finally {
        running--;
      }
    });
    try {
      const slow = reload();
      await first;
      const settled: number[] = [];
      const burst = Array.from({ length: 6 }, (_, i) => reload().then(() => settled.push(i)));
      // None of the burst settles on the read that began before it.
      release();
      await slow;
      expect(settled).toEqual([]);
      await Promise.all(burst);
      expect([reads.mock.calls.length, most, settled.length]).toEqual([2, 1, 6]);
    } finally {
      release();
      reads.mockRestore();
    }
  });

  it('a read of the stored rates that answers after a newer one was asked for never has the last word', async () => {
    const rates = svc.app.get(RatesService, { strict: false });
    const repo = svc.app.get(RateRepository, { strict: false });
    const db = svc.app.get(DataSource, { strict: false });
    const reload = () => (rates as unknown as { reload(): Promise<void> }).reload();
    const before = await sql<{ currency: string; rate: string; source: string }>(`SELECT currency, rate, source FROM rates`);
    const real = repo.allWithAge.bind(repo);
    let readDone!: () => void;
    const read = new Promise<void>((r) => (readDone = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // The first read runs against the database as it is, and its answer is held back (a busy moment).
    const slowRead = jest.spyOn(repo, 'allWithAge').mockImplementationOnce(async () => {
      const rows = await real();
      readDone();
      await held;
      return rows;
    });
    try {
      const slow = reload();
      await read;
      await db.transaction((em) => repo.store(em, { chf: '0.77' }, 'test:refresh', { answeredAt: performance.now(), complete: false }));
      // Asked after the store (an announcement, a refresh's own read): answered by a read begun after it. Were
      // reads to overlap, that one would be held first (waited for here), and the slow one land on top of it.
      const after = reload();
      await waitFor(async () => rates.rate('chf') === '0.77', 1000, 20).catch(() => undefined);
      release();
      await Promise.all([slow, after]);
      expect(rates.rate('chf')).toBe('0.77');
    } finally {
      release();
      slowRead.mockRestore();
      await db.transaction(async (em) => {
        await em.query(`DELETE FROM rates`);
        for (const r of before) await em.query(`INSERT INTO rates (currency, rate, source, updated_at) VALUES ($1, $2, $3, now())`, [r.currency, r.rate, r.source]);
      });
      await reload();
    }
  });
});
