import { join } from 'node:path';

/** Where `npm run sandbox` leaves what `npm run sandbox:pay` and `sandbox:dashboard` need (API, key, chain, payer, merchant). */
export const SANDBOX_FILE = join(__dirname, '..', '.tmp', 'sandbox.json');

/** What `npm run sandbox` wrote to SANDBOX_FILE. */
export interface SandboxFile {
  api: string;
  publicUrl: string;
  apiKey: string;
  rpcUrl: string;
  token: string;
  payerKey: string;
  merchantKey: string;
}
