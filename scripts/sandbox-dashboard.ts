/**
 * `npm run sandbox:dashboard`: signs the sandbox's demo merchant in to its dashboard (DESIGN §5) with the
 * merchant wallet's key — a funded local account whose key is public — and prints the session cookie, the
 * CSRF token and curl calls to the dashboard API, and the key to import into a browser wallet for the UI.
 */
import { readFileSync } from 'node:fs';
import { Wallet } from 'ethers';
import { SiweMessage } from 'siwe';
import { SANDBOX_FILE, type SandboxFile } from './sandbox-file';

async function main(): Promise<void> {
  let s: SandboxFile;
  try {
    s = JSON.parse(readFileSync(SANDBOX_FILE, 'utf8')) as SandboxFile;
  } catch {
    throw new Error('No sandbox found: start `npm run sandbox` first (in another terminal), then run this again.');
  }
  if (!s.merchantKey || !s.publicUrl) throw new Error('The sandbox file is from an older sandbox: restart `npm run sandbox`.');
  const wallet = new Wallet(s.merchantKey);
  const nonce = (await (await fetch(`${s.api}/dashboard/api/nonce`)).json()) as { ok: boolean; nonce?: string };
  if (!nonce.nonce) throw new Error(`GET /dashboard/api/nonce → ${JSON.stringify(nonce)}`);
  // The message names the service by its PUBLIC_URL, as a browser on that address would.
  const message = new SiweMessage({
    domain: new URL(s.publicUrl).host,
    address: wallet.address,
    statement: 'Sign in to your merchant dashboard.',
    uri: `${s.publicUrl}/dashboard`,
    version: '1',
    chainId: 31337,
    nonce: nonce.nonce,
    issuedAt: new Date().toISOString(),
  }).prepareMessage();
  const res = await fetch(`${s.api}/dashboard/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature: await wallet.signMessage(message) }),
  });
  const session = (await res.json()) as { ok: boolean; merchant_id?: string; csrf_token?: string };
  if (!res.ok || !session.csrf_token) throw new Error(`POST /dashboard/api/session → ${res.status} ${JSON.stringify(session)}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
  const base = `${s.publicUrl}/dashboard/api`;

  console.log(`Signed in to the dashboard as merchant ${session.merchant_id} (wallet ${wallet.address}).
  cookie           ${cookie}
  csrf token       ${session.csrf_token}   (header x-csrf-token on every change)

Read your merchant and its requests:
  curl -s -b '${cookie}' ${base}/me
  curl -s -b '${cookie}' '${base}/requests?limit=5'

Create a request from the dashboard (metadata is null for these):
  curl -s -X POST ${base}/requests -b '${cookie}' \\
    -H 'x-csrf-token: ${session.csrf_token}' -H 'Content-Type: application/json' \\
    -d '{"fiat_amount_int":350,"memo":"Espresso"}'

In a browser: import this private key into a wallet extension (a public test key of the local chain — never
use it anywhere else), add the network ${s.rpcUrl} with chain id 31337, then open ${s.publicUrl}/dashboard
and sign in:
  private key      ${s.merchantKey}`);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
