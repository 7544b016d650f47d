/**
 * `npm run sandbox:pay <request_id>`: pays a sandbox request the way a payer would — an ERC-20 transfer of
 * exactly the requested amount from the funded payer wallet, then the hash submitted on the pay API — and
 * waits until the request reads verified.
 */
import { readFileSync } from 'node:fs';
import { SANDBOX_FILE, type SandboxFile } from './sandbox-file';
import { transferToken } from './chain/local-node';

async function main(): Promise<void> {
  const id = process.argv[2];
  if (!id) throw new Error('usage: npm run sandbox:pay <request_id>');
  const s = JSON.parse(readFileSync(SANDBOX_FILE, 'utf8')) as SandboxFile;
  const view = (await (await fetch(`${s.api}/pay/api/${id}`)).json()) as any;
  if (!view.ok) throw new Error(`no such request: ${JSON.stringify(view)}`);
  console.log(`paying ${view.amount} base units of ${view.token_symbol} to ${view.recipient} …`);
  const tx = await transferToken(s.rpcUrl, view.asset_id.split('erc20:')[1], s.payerKey, view.recipient, BigInt(view.amount));
  console.log(`transfer mined: ${tx.txHash} (block ${tx.blockNumber})`);
  const proof = await fetch(`${s.api}/pay/api/${id}/proof`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tx_hash: tx.txHash }),
  });
  console.log(`proof submitted: ${(await proof.json() as any).proof_status}`);
  for (let i = 0; i < 60; i++) {
    const r = (await (await fetch(`${s.api}/api/v1/requests/${id}`, { headers: { authorization: `Bearer ${s.apiKey}` } })).json()) as any;
    if (r.proof_status === 'verified') {
      console.log(`verified at ${r.proof_verified_at}:\n${JSON.stringify(r, null, 2)}`);
      return;
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
  throw new Error('not verified within 60 s');
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
