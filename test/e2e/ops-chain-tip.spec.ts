import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { LaggingRpc } from '../support/lagging-rpc';
import { sample } from '../support/metrics';
import { testEnv } from '../support/test-env';
import { waitFor } from '../support/wait';

/*
 * The chain RPC lagging: a node that stopped following its chain still answers eth_chainId, so /health/ready
 * stays 200 while no payment verifies. The operator sees it in /metrics: `prs_chain_tip{mode}` stands still
 * while the chain moves, and `prs_chain_tip_age_seconds{mode}` (now − the tip block's timestamp) grows.
 */
let rpc: LaggingRpc;
let svc: TestService;

async function node(method: string, params: unknown[] = []): Promise<any> {
  const res = await fetch(testEnv().rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

const nodeTip = async () => Number(await node('eth_blockNumber'));
const blockTime = async (n: number) => Number((await node('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).timestamp);

async function scrape(): Promise<{ tip: number | null; age: number | null; up: number | null; live: number | null }> {
  const r = await call(svc.adminUrl, 'GET', '/metrics');
  expect(r.status).toBe(200);
  return {
    tip: sample(r.text, 'prs_chain_tip', { mode: 'test' }),
    age: sample(r.text, 'prs_chain_tip_age_seconds', { mode: 'test' }),
    up: sample(r.text, 'prs_scrape_source_up', { source: 'chain' }),
    live: sample(r.text, 'prs_chain_tip', { mode: 'live' }),
  };
}

beforeAll(async () => {
  rpc = new LaggingRpc(testEnv().rpcUrl);
  await rpc.start();
  svc = await startService({ env: { CHAIN_TEST_RPC_URL: rpc.url, CHAIN_LIVE_RPC_URL: '' } });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await rpc?.stop();
});

it('shows a tip that stands still while the chain moves, and its age growing, while readiness stays 200', async () => {
  await node('evm_mine');
  const tip0 = await nodeTip();
  const before = await scrape();
  expect(before.tip).toBe(tip0);
  expect(before.up).toBe(1);
  expect(before.live).toBeNull(); // live mode has no RPC here

  // The node the service reads stops following: the chain grows by 3 blocks it does not show.
  await node('evm_mine');
  await node('evm_mine');
  await node('evm_mine');
  rpc.lagBy(3);
  // The tip's age grows with the wall clock while the node shows no new block.
  const stuck = (await waitFor(async () => {
    const s = await scrape();
    return s.age !== null && s.age - (before.age ?? 0) > 1.5 ? s : null;
  }, 10_000, 200))!;

  const ready = await call(svc.adminUrl, 'GET', '/health/ready');
  expect(ready.status).toBe(200); // it answers eth_chainId: readiness cannot tell
  expect(stuck.tip).toBe(tip0);
  expect(await nodeTip()).toBe(tip0 + 3);
  const expectedAge = Date.now() / 1000 - (await blockTime(tip0));
  expect(stuck.age).not.toBeNull();
  expect(Math.abs(stuck.age! - expectedAge)).toBeLessThan(1.5);
  expect(stuck.age! - (before.age ?? 0)).toBeGreaterThan(1.5);

  rpc.catchUp();
  const caughtUp = await scrape();
  expect(caughtUp.tip).toBe(tip0 + 3);
  expect(Math.abs(caughtUp.age! - (Date.now() / 1000 - (await blockTime(tip0 + 3))))).toBeLessThan(1.5);
}, 60000);

it('has no tip sample and prs_scrape_source_up{source="chain"} 0 while the RPC does not answer in time', async () => {
  rpc.slowMethod('eth_blockNumber', 3000);
  const slow = await scrape();
  expect(slow).toMatchObject({ tip: null, age: null, up: 0 });
  rpc.catchUp();
  // Once the slow call still pending ends, the next scrape reads the tip again.
  const tip = await nodeTip();
  await waitFor(async () => {
    const s = await scrape();
    return s.up === 1 && s.tip === tip;
  }, 10_000, 200);
}, 60000);
