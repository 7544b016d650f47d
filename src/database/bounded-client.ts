import { connect } from 'node:net';
import { Client, type ClientConfig } from 'pg';

/** Postgres' CancelRequest code (protocol 3.0, "CancelRequest"): 1234 in the high 16 bits, 5678 in the low. */
const CANCEL_REQUEST_CODE = 80877102;
/** A cancel connection that neither connects nor closes by then is dropped: it is best effort. */
const CANCEL_GIVE_UP_MS = 5000;

/** What pg keeps of the server's BackendKeyData and of where it connected (pg/lib/client.js). */
interface Reachable {
  host: string;
  port: number;
  processID?: number | null;
  secretKey?: number | null;
  connection: { stream: { destroy(err?: Error): void } };
}

/** The error of every query still on a connection the bound closed. */
export class QueryTimeoutError extends Error {
  readonly code = 'PRS_QUERY_TIMEOUT';
  constructor(timeoutMs: number) {
    super(
      `Postgres did not answer within ${timeoutMs} ms (DATABASE_QUERY_TIMEOUT_MS): the connection was closed; an open transaction rolls back, but a COMMIT or a single write cut here may have been applied`,
    );
    this.name = 'QueryTimeoutError';
  }
}

/**
 * The pool's Client class (pg-pool's `Client` option), for `timeoutMs` > 0 one that bounds every query:
 * a query unanswered after `timeoutMs` (counted from the call) closes its connection.
 *
 * Why not pg's own `query_timeout`: on timeout pg 8 fails the query but keeps the connection (pg/lib/client.js,
 * Client.query, the readTimeoutTimer: it only splices the query out of the not-yet-sent queue, destroying the
 * stream in pipeline mode alone). The query stays active on that client, so every later query on it queues
 * behind an answer that never comes; TypeORM releases the client to the pool without the error
 * (PostgresQueryRunner.query), and pg-pool keeps any client still `_queryable` (pg-pool, _release): a dead
 * connection stays in the pool for good, and on a live one the statement keeps running on the server. Here
 * the socket is destroyed instead: pg fails every query of the client with the error, marks it not queryable
 * and emits `error` (TypeORM's runner then releases it with the error); pg-pool drops it either way and opens a
 * fresh connection for the next caller. A transaction still open on it is gone with it: the server rolls it
 * back when it sees the connection close (or its keepalives find the peer gone, see dataSourceOptions). A COMMIT,
 * or a write outside a transaction, cut by the bound may have been applied all the same (only its answer was
 * late or lost): its outcome is unknown, as after any lost connection, which the error says.
 *
 * The bound counts from the call, so a query waiting on the same client behind another counts its wait: the
 * service never sends two queries at once on one client (pg 8 deprecates it), and a transaction's statements
 * are awaited one by one.
 *
 * The server may still be running the statement (a slow one rather than a dead link): a CancelRequest goes
 * to it on a connection of its own, as psql's Ctrl-C does; on a server that is gone it just fails.
 *
 * A client that is checked out of the pool outside a TypeORM QueryRunner (preparedQuery's pool.connect) has no
 * `error` listener of its own: the one installed here keeps a dead connection's `error` event from being an
 * uncaught exception. Its queries get the error; the pool drops the client when it comes back.
 */
export function boundedClient(timeoutMs: number): typeof Client {
  class BoundedClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config);
      this.on('error', () => undefined);
    }

    // pg's overloads (text, config, Submittable; promise or callback) all pass through as they are.
    override query(...args: any[]): any {
      const run = (): any => (super.query as (...a: unknown[]) => unknown).apply(this, args);
      if (!(timeoutMs > 0)) return run();
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = () => {
        settled = true;
        if (timer) clearTimeout(timer);
      };
      const first = args[0] as
        | { submit?: unknown; callback?: unknown; handleReadyForQuery?: (...a: unknown[]) => unknown; handleError?: (...a: unknown[]) => unknown }
        | null
        | undefined;
      const lastIndex = args.length - 1;
      let promised = false;
      if (first && typeof first.submit === 'function') {
        // A Submittable (pg-cursor, pg-query-stream): it ends with an error or at ReadyForQuery.
        for (const hook of ['handleReadyForQuery', 'handleError'] as const) {
          const original = first[hook];
          if (typeof original !== 'function') continue;
          first[hook] = function (this: unknown, ...a: unknown[]) {
            settle();
            return original.apply(this, a);
          };
        }
      } else if (lastIndex > 0 && typeof args[lastIndex] === 'function') {
        const callback = args[lastIndex] as (...a: unknown[]) => unknown;
        args[lastIndex] = (...a: unknown[]) => {
          settle();
          return callback(...a);
        };
      } else if (first && typeof first === 'object' && typeof first.callback === 'function') {
        // A config carrying its own callback: pg then returns no promise.
        const callback = first.callback as (...a: unknown[]) => unknown;
        args[0] = {
          ...first,
          callback: (...a: unknown[]) => {
            settle();
            return callback(...a);
          },
        };
      } else {
        promised = true;
      }
      const result = run();
      // The promise handed back is the one that settles the timer, so a failure nobody awaits is still an
      // unhandled rejection, as with pg's own promise.
      const answered =
        promised && result && typeof (result as Promise<unknown>).then === 'function'
          ? (result as Promise<unknown>).then(
              (r) => {
                settle();
                return r;
              },
              (e: unknown) => {
                settle();
                throw e;
              },
            )
          : result;
      if (!settled) {
        timer = setTimeout(() => this.abandon(timeoutMs), timeoutMs);
        timer.unref();
      }
      return answered;
    }

    /** Cancels whatever the server runs for this connection and closes the connection. */
    private abandon(ms: number): void {
      const self = this as unknown as Reachable;
      sendCancel(self);
      self.connection.stream.destroy(new QueryTimeoutError(ms));
    }
  }
  return BoundedClient;
}

/** A CancelRequest for the connection's backend, fire and forget (a server that is gone just fails it). */
function sendCancel(client: Reachable): void {
  const { processID, secretKey, host, port } = client;
  if (typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const socket = host && host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host || 'localhost');
  socket.unref();
  socket.setTimeout(CANCEL_GIVE_UP_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('connect', () => {
    const packet = Buffer.alloc(16);
    packet.writeInt32BE(16, 0);
    packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
    packet.writeInt32BE(processID, 8);
    packet.writeInt32BE(secretKey, 12);
    socket.end(packet);
  });
}
