import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * A separate `src/main.ts --worker` process with exactly this environment (build it with testEnvVars), for
 * specs that kill a worker with SIGKILL. Resolves once the worker reports it is running.
 */
export function spawnWorker(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts', '--worker'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running past the test (it would hold the run open and work the file's queues on its own).
      child.kill('SIGKILL');
      reject(new Error(`worker did not start within 30 s:\n${output}`));
    }, 30_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes('worker running')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code}:\n${output}`));
    });
  });
}

/** Kills a spawned service process that is still running and waits for it to be gone. */
export async function killProcess(child: ChildProcess | undefined): Promise<void> {
  // A process ended by a signal has no exit code: without the signal's check this waited for a second 'exit'.
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}
