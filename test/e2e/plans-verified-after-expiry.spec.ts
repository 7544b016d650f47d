import { randomBytes } from 'node:crypto';
import { Wallet } from 'ethers';
import { DEV_KEYS, deployToken, findFreePort, mine, mint, rpc, startLocalNode, transferToken, type LocalNode } from '../../scripts/chain/local-node';
import { dueAt } from '../../src/modules/plans/domain/schedule';
import { signInDashboard, type DashboardClient } from '../factories/dashboard';
import { createOnboardedMerchant, createPartner } from '../factories/partners';
import { startService, type TestService } from '../support/app';
import { closeSql, sql } from '../support/db';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';
import { TestClock } from '../support/clock';

/*
 * DESIGN §5, a charge paid on time whose verification comes after its expiry was stored (deep confirmations, a
 * worker or RPC outage). A daily plan with the default expiry (7 days) has several charges open at once. Its
 * charge 0 was missed; charge 1 is paid a second before its expires_at, but its 3 confirmations come after it,
 * so the sweep stores charge 1 expired first: the second miss in a row pauses the plan. The payment then
 * verifies. Charge 1 was not the plan's latest (charge 2 is open), and only the latest resumed a plan: it
 * stayed paused for unpaid with no miss left, and charged no period again (a time-edge hunt). Resumed, it must
 * also charge the period that fell due while it was wrongly paused (a review).
 */
const env = testEnv();
const clock = new TestClock();
// A chain of this file's own: the payment's block time is set against expires_at on the database's clock, and
// the jest worker's shared node may run ahead of the wall clock (other files move its time).
let node: LocalNode;
let token: string;
let svc: TestService;
let merchant: { id: string; wallet: Wallet };
let dash: DashboardClient;

beforeAll(async () => {
  node = await startLocalNode({ port: await findFreePort() });
  token = await deployToken(node.url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  svc = await startService({
    worker: true,
    plans: { clock },
    env: {
      REDIS_PREFIX: `${env.redisPrefix}-late-verify-${randomBytes(3).toString('hex')}`,
      PLAN_SCHEDULER_INTERVAL_MS: '200',
      EXPIRY_SWEEP_INTERVAL_MS: '200',
      CHAIN_SCAN_INTERVAL_MS: '300',
      HEAD_POLL_MS: '100',
      VERIFY_POLL_MS: '200',
      RATE_LIMIT_SCALE: '100',
      CHAIN_TEST_RPC_URL: node.url,
      CHAIN_TEST_TOKEN_ADDRESS: token,
      CHAIN_TEST_CONFIRMATIONS: '3',
    },
  });
  const partner = await createPartner(svc);
  merchant = await createOnboardedMerchant(svc, partner.testKey);
  dash = await signInDashboard(svc, merchant.wallet);
}, 60_000);

afterAll(async () => {
  await svc?.close();
  await node?.stop();
  await closeSql();
});

const planRow = async (id: string) =>
  (await sql(`SELECT status, pause_reason, missed_in_row, next_period_index, next_charge_at FROM plans WHERE id = $1`, [id]))[0];
const requestRow = async (id: string) => (await sql(`SELECT status, proof_status, expires_at FROM payment_requests WHERE id = $1`, [id]))[0];

it('a charge paid before its expires_at and verified after it leaves its plan active, its next period due', async () => {
  const startAt = new Date(clock.now().getTime() + 60_000);
  const created = await dash.call('POST', '/plans', { body: { title: 'Daily', fiat_amount_int: 1234, interval: 'day', start_at: startAt.toISOString() } });
  expect(created.status).toBe(201);
  expect(created.body.expiry_minutes).toBe(10080);
  const planId: string = created.body.plan_id;
  const due = (k: number) => dueAt({ startAt, interval: 'day', intervalCount: 1 }, k);
  /** The scheduler's clock at period k's due time, until it has charged it. */
  const reach = async (k: number) => {
    clock.set(new Date(due(k).getTime() + 1));
    await waitFor(async () => (await planRow(planId)).next_period_index > k, 15_000, 50);
  };

  // Period 0 charged, then missed: one miss.
  await reach(0);
  await sql(`UPDATE payment_requests SET expires_at = now() - interval '1 second', claim_until = now() - interval '1 second' WHERE plan_id = $1 AND period_index = 0`, [planId]);
  await waitFor(async () => (await planRow(planId)).missed_in_row === 1, 15_000, 50);
  // Periods 1 and 2 charged; both open.
  await reach(1);
  await reach(2);
  const [c1] = await sql<{ id: string; amount: string }>(`SELECT id, amount FROM payment_requests WHERE plan_id = $1 AND period_index = 1`, [planId]);

  // The payer pays charge 1, whose expires_at is a second after the block that carries the payment.
  const payer = DEV_KEYS[3];
  await mint(node.url, token, new Wallet(payer).address, BigInt(c1.amount));
  const tx = await transferToken(node.url, token, payer, merchant.wallet.address, BigInt(c1.amount));
  const block = await rpc<{ timestamp: string }>(node.url, 'eth_getBlockByNumber', [`0x${tx.blockNumber.toString(16)}`, false]);
  const minedAt = Number(BigInt(block.timestamp));
  await sql(`UPDATE payment_requests SET expires_at = to_timestamp($2 + 1), claim_until = to_timestamp($2 + 1) + interval '1 hour' WHERE id = $1`, [c1.id, minedAt]);
  // Its confirmations come after that: the sweep stores the expiry first, the second miss pauses the plan.
  await waitFor(async () => (await planRow(planId)).status === 'paused', 15_000, 50);
  expect(await planRow(planId)).toMatchObject({ pause_reason: 'unpaid', missed_in_row: 2 });
  expect((await requestRow(c1.id)).status).toBe('expired');

  // Period 3 falls due while the plan is paused: nothing is charged for it yet.
  clock.set(new Date(due(3).getTime() + 1));
  await mine(node.url, 2);
  await waitFor(async () => (await requestRow(c1.id)).proof_status === 'verified', 30_000, 100);
  expect(minedAt * 1000).toBeLessThan((await requestRow(c1.id)).expires_at.getTime());
  // Paid on time: no miss after it, so the plan goes on as if never paused, and period 3 is charged once.
  await waitFor(async () => (await planRow(planId)).next_period_index === 4, 15_000, 50);
  expect(await planRow(planId)).toEqual({ status: 'active', pause_reason: null, missed_in_row: 0, next_period_index: 4, next_charge_at: due(4) });
  const periods = await sql<{ period_index: number }>(`SELECT period_index FROM payment_requests WHERE plan_id = $1 ORDER BY period_index`, [planId]);
  expect(periods.map((r) => r.period_index)).toEqual([0, 1, 2, 3]);
}, 120_000);
