import { loadConfig } from './config/config';

/**
 * `start`: the API and the worker in one process (local use). `start:api` / `start:worker` pass a role
 * (`--api`, `--worker`) so production can scale them separately.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const only = args.includes('--api') ? 'api' : args.includes('--worker') ? 'worker' : null;
  const config = loadConfig();
  // The application is loaded only once its configuration is read: a bad one stops the process at once.
  const { Logger } = require('@nestjs/common') as typeof import('@nestjs/common');
  const { start } = require('./bootstrap') as typeof import('./bootstrap');
  const running = await start(config, { http: only !== 'worker', worker: only !== 'api' });
  const log = new Logger('Main');
  if (running.publicUrl) log.log(`public listener ${running.publicUrl}, admin listener ${running.adminUrl}`);
  if (only !== 'api') log.log('worker running');
  const stop = async () => {
    await running.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e: Error) => {
  // Before (or instead of) the JSON logger: still one JSON line, like every other line of the process.
  console.error(JSON.stringify({ level: 'fatal', time: new Date().toISOString(), pid: process.pid, msg: e.message }));
  process.exit(1);
});
