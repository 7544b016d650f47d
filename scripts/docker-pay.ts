/**
 * `docker compose run --rm seed node dist/scripts/docker-pay.js <request_id>`: pays a sandbox request as a
 * payer would — an ERC-20 transfer of exactly the requested amount from the funded payer wallet (Hardhat
 * account 1), the hash submitted on the pay API — and waits until the request reads verified.
 */
import { readFileSync } from 'node:fs';
import { DEV_KEYS, transferToken } from './chain/local-node';

const API_URL = process.env.API_URL || 'http://api:3000';
const RPC_URL = process.env.RPC_URL || 'http://chain:8545';
const SANDBOX_OUT = process.env.SANDBOX_OUT || '/data/sandbox.json';

async function main(): Promise<void> {
  const id = process.argv[2];
  if (!id) throw new Error('usage: node dist/scripts/docker-pay.js <request_id>');
  const { apiKey } = JSON.parse(readFileSync(SANDBOX_OUT, 'utf8')) as { apiKey: string };
  const view = (await (await fetch(`${API_URL}/pay/api/${id}`)).json()) as any;
  if (!view.ok) throw new Error(`no such request: ${JSON.stringify(view)}`);
  const token = String(view.asset_id).split('erc20:')[1];
  console.log(`paying ${view.amount} base units of ${view.token_symbol} to ${view.recipient} …`);
  const tx = await transferToken(RPC_URL, token, DEV_KEYS[1], view.recipient, BigInt(view.amount));
  console.log(`transfer mined: ${tx.txHash} (block ${tx.blockNumber})`);
  const proof = await fetch(`${API_URL}/pay/api/${id}/proof`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tx_hash: tx.txHash }),
  });
  console.log(`proof submitted: ${((await proof.json()) as any).proof_status}`);
  for (let i = 0; i < 90; i++) {
    const r = (await (await fetch(`${API_URL}/api/v1/requests/${id}`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as any;
    if (r.proof_status === 'verified') {
      console.log(`verified at ${r.proof_verified_at}:\n${JSON.stringify(r, null, 2)}`);
      return;
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
  throw new Error('not verified within 90 s');
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
