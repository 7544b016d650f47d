import { Wallet } from 'ethers';
import { DEV_KEYS } from '../../scripts/chain/local-node';
import { sql } from '../support/db';
import { call } from '../support/http';
import { startScanningFixture, stopScanning, type ScanningFixture } from '../support/lagging-rpc';
import { holdUnknownTransfers } from '../support/scan-state';

/*
 * A retry round of undecided transfers on a slow node stops at half its lease and puts back what it did not
 * try, so it never holds a transfer past its lease (where another round would take the same transfers and
 * repeat every call). Sixteen transfers the node does not know, each receipt answered 400 ms late: one round
 * would need 6.4 s or more, past its 6 s lease. ChainScanService.retryUndecided.
 */
const LEASE_MS = 6000;
const SLOW_MS = 400;
const TRANSFERS = 16;
const PAYER = DEV_KEYS[1];
let f: ScanningFixture;

beforeAll(async () => {
  f = await startScanningFixture(PAYER, { CHAIN_LIVE_RPC_URL: '', CHAIN_RETRY_LEASE_MS: String(LEASE_MS) });
}, 60000);

afterAll(async () => {
  f?.rpc.catchUp();
  await stopScanning(f?.svc, f?.rpc, f?.node);
});

it('a round on a slow node stops at half its lease and puts back the rest: no transfer stays leased past its lease', async () => {
  const { node, token, rpc, svc, partner, merchant } = f;
  const created = await call(svc.publicUrl, 'POST', '/api/v1/requests/create', {
    key: partner.testKey,
    body: { account_id: merchant.id, fiat_amount_int: 1234 },
  });
  expect(created.status).toBe(201);
  const r = { id: created.body.request_id as string, amount: BigInt(created.body.amount) };
  rpc.slowMethod('eth_getTransactionReceipt', SLOW_MS);
  await holdUnknownTransfers(node.url, token, new Wallet(PAYER).address, merchant.wallet.address, r, TRANSFERS);

  // Each lease the rounds take, from when it is first seen on a row until no row carries it any more. Sampled,
  // so a lifetime seen is never longer than the real one: a round that outlived its lease would show it.
  const seen = new Map<string, { first: number; last: number }>();
  const started = Date.now();
  for (;;) {
    const rows = await sql<{ lease: string | null; retries: number }>(
      `SELECT retry_lease::text AS lease, retries FROM unmatched_transfers WHERE pending_request_id = $1`, [r.id]);
    const now = Date.now();
    for (const { lease } of rows) {
      if (lease === null) continue;
      const s = seen.get(lease);
      if (s) s.last = now;
      else seen.set(lease, { first: now, last: now });
    }
    expect(rows).toHaveLength(TRANSFERS); // put back, never given up nor lost
    if (rows.every((u) => u.retries >= 1) && rows.every((u) => u.lease === null)) break;
    if (now - started > 60_000) throw new Error(`not every transfer tried within 60 s: ${JSON.stringify(rows)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const lifetimes = [...seen.values()].map((s) => s.last - s.first);
  // One round could not try them all: the first stopped and later rounds took the rest.
  expect(seen.size).toBeGreaterThanOrEqual(2);
  // Each round let its transfers go at about half its lease (the try under way at half ends first; 2.1 s seen
  // with a 4 s lease), well before the lease ran out.
  expect(Math.max(...lifetimes)).toBeLessThan(0.8 * LEASE_MS);
  rpc.catchUp();
  await sql(`DELETE FROM unmatched_transfers WHERE pending_request_id = $1`, [r.id]);
}, 90_000);
