import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
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
  /** Milliseconds between SIGTERM and SIGKILL on stop. */
  killAfterMs?: number;
}

export const LOG_DIR = path.join(__dirname, '..', '.tmp', 'bench-logs');

/**
 * Starts `node <nodeArgs>` as a tracked child with the watchdog preload. Its stdout and stderr go to a file
 * (LOG_DIR/<name>.log), not to a pipe: a child logging synchronously into a pipe that this busy load
 * generator drains late would be throttled by the bench itself.
 */
export function startNode(name: string, nodeArgs: string[], opts: StartOptions = {}): Child {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = path.join(LOG_DIR, `${name.replace(/[^a-z0-9-]+/gi, '-')}.log`);
  const fd = openSync(logFile, 'w');
  let proc: ChildProcess;
  try {
    proc = spawn(process.execPath, [...WATCHDOG, ...nodeArgs], {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', fd, fd, 'ipc'],
    });
  } finally {
    closeSync(fd);
  }
  live.add(proc);
  const tail = (): string => {
    try {
      const size = statSync(logFile).size;
      const start = Math.max(0, size - TAIL_CHARS);
      const buf = Buffer.alloc(size - start);
      const rfd = openSync(logFile, 'r');
      try {
        readSync(rfd, buf, 0, buf.length, start);
      } finally {
        closeSync(rfd);
      }
      return `(${logFile})\n${buf.toString('utf8').trim()}`;
    } catch {
      return `(no output: ${logFile})`;
    }
  };
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
    tail,
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
