import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { findFreePort } from '../../scripts/chain/local-node';
import { waitFor } from './wait';

/**
 * A private `redis-server` on a free loopback port, for tests that take Redis away and bring it back (empty:
 * no persistence). The run's shared Redis on 6379 is never touched.
 */
export class RedisServer {
  private child: ChildProcess | null = null;

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await findFreePort());
    await server.up();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, on the same port, with no data). */
  async up(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: 'ignore',
    });
    this.child = child;
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      return canConnect(this.port);
    }, 10000, 50);
  }

  /** Stops it answering with its connections left open, as a stalled host would (SIGSTOP); resume() undoes it. */
  stall(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Kills it, as a crash would. */
  async down(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
