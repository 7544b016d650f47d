import { loadConfig } from '../src/config/config';
import { revertMigrations } from '../src/database/data-source';

/** `npm run migrate:revert [-- <count>]`: reverts the migration applied last, or the last <count>. */
async function main(): Promise<void> {
  const arg = process.argv[2] ?? '1';
  if (!/^[1-9][0-9]*$/.test(arg)) throw new Error(`usage: npm run migrate:revert [-- <count>], count a positive integer (got "${arg}")`);
  const config = loadConfig();
  const reverted = await revertMigrations(config.databaseUrl, Number(arg));
  console.log(reverted.length ? `reverted: ${reverted.join(', ')}` : 'no migration is applied');
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
