import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

/**
 * Child processes of the bench and the one cleanup that ends them all: on normal exit, on error and on
 * Ctrl-C. Each child also gets an IPC channel and a preload that exits it when the channel closes, so even a
 * SIGKILLed bench leaves no orphan holding a port or a database connection.
 */
const WATCHDOG = ['-r', path.join(__dirname, 'watchdog.js')];
const TAIL_CHARS = 16_000;

export interface Child {
  name: string;
  proc: ChildProcess;
  /** The last output of the child, for error messages. */
  tail(): string;
  /** Resolves when the child has exited; the text says how. */
  exited: Promise<string>;
  hasExited(): boolean;
  stop(): Promise<void>;
}

const cleanups: Array<{ name: string; fn: () => Promise<void> }> = [];
const live = new Set<ChildProcess>();

process.on('exit', () => {
  // Only synchronous work is possible here: whatever the async cleanup did not reach dies now.
  for (const c of live) c.kill('SIGKILL');
});

/** Registers something to undo at the end, run in reverse order of registration. */
export function onCleanup(name: string, fn: () => Promise<void>): void {
  cleanups.push({ name, fn });
}

let cleaning: Promise<void> | null = null;

/** Runs every registered cleanup once (later calls wait for the first). Never throws. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const c = cleanups.pop()!;
      try {
        await c.fn();
      } catch (e) {
        console.error(`cleanup of ${c.name} failed: ${(e as Error).message}`);
      }
    }
  })();
  return cleaning;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Receives every output chunk (e.g. to echo it with BENCH_VERBOSE). */
  onOutput?: (text: string) => void;
  /** Milliseconds between SIGTERM and SIGKILL on stop. */
  killAfterMs?: number;
}

/** Starts `node <nodeArgs>` as a tracked child with the watchdog preload. */
export function startNode(name: string, nodeArgs: string[], opts: StartOptions = {}): Child {
  const proc = spawn(process.execPath, [...WATCHDOG, ...nodeArgs], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  live.add(proc);
  let output = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    opts.onOutput?.(text);
    output = (output + text).slice(-TAIL_CHARS);
  };
  // Both pipes are drained for the child's whole life: a full pipe would block it.
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  let exitInfo: string | null = null;
  const exited = new Promise<string>((resolve) => {
    proc.once('exit', (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `code ${code}`;
      live.delete(proc);
      resolve(exitInfo);
    });
    proc.once('error', (e) => {
      exitInfo ??= `spawn error: ${e.message}`;
      live.delete(proc);
      resolve(exitInfo);
    });
  });
  let stopping: Promise<void> | null = null;
  const child: Child = {
    name,
    proc,
    tail: () => output.trim(),
    exited,
    hasExited: () => exitInfo !== null,
    stop: () => {
      stopping ??= (async () => {
        if (exitInfo !== null) return;
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), opts.killAfterMs ?? 10_000);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
  onCleanup(name, child.stop);
  return child;
}

/** Runs `node <nodeArgs>` to completion; rejects with its output when it fails. */
export async function runNode(name: string, nodeArgs: string[], opts: StartOptions = {}): Promise<string> {
  const child = startNode(name, nodeArgs, opts);
  const how = await child.exited;
  if (how !== 'code 0') throw new Error(`${name} failed (${how}):\n${child.tail()}`);
  return child.tail();
}
