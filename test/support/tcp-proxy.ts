import { createServer, connect, type Server, type Socket } from 'node:net';
import { findFreePort } from '../../scripts/chain/local-node';

/**
 * A loopback TCP proxy that can be cut and restored, to take a JSON-RPC node "down" for the service
 * without losing the node's state. `tap` sees each connection's two sockets (to read what passes).
 * `replyDelayMs` holds everything the target sends back (and its close) that long: a slow server.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;
  replyDelayMs = 0;

  constructor(
    private readonly targetPort: number,
    private readonly tap?: (client: Socket, upstream: Socket) => void,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Listens on `port`, or on one from findFreePort: restore() binds the same number again, which a port the OS
   * chose (the ephemeral range) could meanwhile have gone to another worker's listen(0) or an outgoing socket.
   */
  async start(port?: number): Promise<void> {
    port ??= await findFreePort();
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      const later = (f: () => void) => (this.replyDelayMs > 0 ? setTimeout(f, this.replyDelayMs) : f());
      client.on('error', drop).on('close', drop);
      upstream.on('error', () => later(drop)).on('close', () => later(drop));
      this.tap?.(client, upstream);
      client.pipe(upstream);
      // Equal delays keep the order: timers of one duration fire in the order they were set.
      upstream.on('data', (chunk: Buffer) => later(() => client.destroyed || client.write(chunk)));
    });
    await new Promise<void>((resolve, reject) => this.server!.once('error', reject).listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Refuses new connections and cuts the open ones. */
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  /** Listens again on the same port. */
  async restore(): Promise<void> {
    await this.start(this.port);
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
