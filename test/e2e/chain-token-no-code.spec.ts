import { Logger } from '@nestjs/common';
import { Wallet } from 'ethers';
import { startService, type TestService } from '../support/app';
import { call } from '../support/http';
import { testEnv } from '../support/test-env';
import { closeSql, sql } from '../support/db';
import { AssetRegistry } from '../../src/modules/chain/asset-registry';

/*
 * A token address with no contract code on a node that answers (a typo in CHAIN_<MODE>_TOKEN_ADDRESS, or a
 * Hardhat node restarted without its deploy). Until 2026-11-28 the mode was left "unreachable" and the log and
 * readiness said "RPC unreachable", sending the operator to look at a node that was fine.
 */
const EMPTY = Wallet.createRandom().address.toLowerCase();
let svc: TestService;
const warnings: string[] = [];

beforeAll(async () => {
  jest.spyOn(Logger.prototype, 'warn').mockImplementation((m: unknown) => void warnings.push(String(m)));
  const env = testEnv();
  svc = await startService({
    env: {
      CHAIN_TEST_RPC_URL: env.rpcUrl,
      CHAIN_TEST_CHAIN_ID: env.chainId,
      CHAIN_TEST_TOKEN_ADDRESS: EMPTY,
      CHAIN_LIVE_RPC_URL: '',
    },
  });
}, 60000);

afterAll(async () => {
  await svc?.close();
  await closeSql();
  jest.restoreAllMocks();
});

it('readiness and the log name the missing contract and the chain id, not the RPC', async () => {
  const { chainId } = testEnv();
  const ready = await call(svc.adminUrl, 'GET', '/health/ready');
  expect(ready.status).toBe(503);
  const message = String(ready.body.details.chain_test.message ?? JSON.stringify(ready.body.details.chain_test));
  expect(message).toContain(`no contract at CHAIN_TEST_TOKEN_ADDRESS ${EMPTY} on chain id ${chainId}`);
  expect(message).not.toMatch(/RPC unreachable/);
  const logged = warnings.filter((w) => w.includes(EMPTY));
  expect(logged.length).toBeGreaterThan(0);
  for (const w of logged) expect(w).not.toMatch(/RPC unreachable/);
  expect(logged.join('\n')).toContain(`no contract at CHAIN_TEST_TOKEN_ADDRESS ${EMPTY} on chain id ${chainId}`);
});

// A contract that is not an ERC-20 at the token address (another contract's address pasted): the node answered
// too, so not "RPC unreachable" either.
it('readiness names a contract that is not an ERC-20 token, and why', async () => {
  const env = testEnv();
  const notToken = Wallet.createRandom().address.toLowerCase();
  const set = await call(env.rpcUrl, 'POST', '', { body: { jsonrpc: '2.0', id: 1, method: 'hardhat_setCode', params: [notToken, '0x60006000fd'] } });
  expect(set.body.error).toBeUndefined();
  const other = await startService({
    env: { CHAIN_TEST_RPC_URL: env.rpcUrl, CHAIN_TEST_CHAIN_ID: env.chainId, CHAIN_TEST_TOKEN_ADDRESS: notToken, CHAIN_LIVE_RPC_URL: '' },
  });
  try {
    const ready = await call(other.adminUrl, 'GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(String(ready.body.details.chain_test.message)).toBe(
      `the contract at CHAIN_TEST_TOKEN_ADDRESS ${notToken} on chain id ${env.chainId} is not an ERC-20 token (decimals() reverted)`,
    );
  } finally {
    await other.close();
  }
});

// Metadata stored from an earlier start (a dev node restarted without its deploy) must not turn the mode on: the
// node says there is no token there, so a request created now could never be paid.
it('stored token metadata does not turn on a mode whose token address has no contract', async () => {
  const env = testEnv();
  const gone = Wallet.createRandom().address.toLowerCase();
  await sql(`INSERT INTO assets (chain_id, token_address, symbol, decimals) VALUES ($1, $2, 'USDT', 6)`, [env.chainId, gone]);
  const other = await startService({
    env: { CHAIN_TEST_RPC_URL: env.rpcUrl, CHAIN_TEST_CHAIN_ID: env.chainId, CHAIN_TEST_TOKEN_ADDRESS: gone, CHAIN_LIVE_RPC_URL: '' },
  });
  try {
    expect(other.app.get(AssetRegistry).status('test').state).toBe('no_token_contract');
    expect(other.app.get(AssetRegistry).asset('test')).toBeNull();
  } finally {
    await other.close();
  }
});
