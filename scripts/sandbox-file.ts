import { join } from 'node:path';

/** Where `npm run sandbox` leaves what `npm run sandbox:pay` needs (API, key, chain, payer). */
export const SANDBOX_FILE = join(__dirname, '..', '.tmp', 'sandbox.json');
