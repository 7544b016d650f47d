/**
 * The `chain` service of docker-compose.yml: a Hardhat node on 0.0.0.0:CHAIN_PORT with the test token.
 * The token is the first contract that account 0 deploys on a fresh chain, so its address is always the
 * same (0x5fbd…0aa3, CHAIN_TEST_TOKEN_ADDRESS in the compose file); this checks it. The payer wallet of
 * the sandbox (Hardhat account 1) gets 1,000,000 TUSD, and a block is mined every BLOCK_INTERVAL_MS so
 * confirmations accrue as on a real chain. Runs in the image's build stage (Hardhat is a dev dependency).
 */
import { Wallet } from 'ethers';
import { DEV_KEYS, deployToken, mint, startLocalNode } from './chain/local-node';

const PORT = Number(process.env.CHAIN_PORT ?? 8545);
const EXPECTED_TOKEN = (process.env.CHAIN_TEST_TOKEN_ADDRESS ?? '0x5fbdb2315678afecb367f032d93f642f64180aa3').toLowerCase();
const BLOCK_INTERVAL_MS = Number(process.env.BLOCK_INTERVAL_MS ?? 2000);
export const PAYER_KEY = DEV_KEYS[1];

function log(msg: string, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ level: 'info', time: new Date().toISOString(), context: 'chain', msg, ...extra }));
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

async function main(): Promise<void> {
  const node = await startLocalNode({ port: PORT, host: '0.0.0.0', timeoutMs: 120_000 });
  const url = `http://127.0.0.1:${PORT}`;
  const token = await deployToken(url, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  if (token !== EXPECTED_TOKEN) {
    throw new Error(`the token was deployed at ${token}, not at CHAIN_TEST_TOKEN_ADDRESS ${EXPECTED_TOKEN}: was this chain fresh?`);
  }
  const payer = new Wallet(PAYER_KEY).address;
  await mint(url, token, payer, 1_000_000n * 10n ** 6n);
  if (BLOCK_INTERVAL_MS > 0) await rpc(url, 'evm_setIntervalMining', [BLOCK_INTERVAL_MS]);
  log('chain ready', { rpc: `http://0.0.0.0:${PORT}`, chain_id: 31337, token, payer, block_interval_ms: BLOCK_INTERVAL_MS });

  const stop = async () => {
    await node.stop();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e: Error) => {
  console.error(JSON.stringify({ level: 'fatal', time: new Date().toISOString(), context: 'chain', msg: e.message }));
  process.exit(1);
});
