import { loadConfig } from '../src/config/config';
import { migrate } from '../src/database/data-source';

async function main(): Promise<void> {
  const config = loadConfig();
  const applied = await migrate(config.databaseUrl);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
