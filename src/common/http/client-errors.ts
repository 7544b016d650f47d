import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** How long a socket may stay open after an answer that closes it (the client has the answer long before). */
const CLOSE_AFTER_ANSWER_MS = 2000;

/**
 * What Node's HTTP parser refuses before Express sees the request (a header with a NUL or control character,
 * headers over 16 KB, a request line it cannot read, a request that took too long to arrive), and an Expect
 * header it does not know, are answered in the API's envelope like every other refusal, with the status Node
 * would have sent (its own answers are a bare status line with no body). The answer goes out only when no
 * response is owed on that socket to another request; then the connection is closed. So is a CONNECT (404).
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: ServerResponse }) => {
    // A response already under way, or owed to an earlier request read whole (a bad request pipelined behind
    // a good one), would take this answer for its own: the connection is closed instead, as for a reset or a
    // socket no longer writable. An error in the body of the request being read is that request's answer.
    const owed = socket._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || (owed && (owed.headersSent || owed.req.complete))) {
      socket.destroy();
      return;
    }
    const [status, error] =
      err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'request_header_fields_too_large']
        : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? [413, 'payload_too_large']
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'request_timeout']
            : [400, 'invalid_request'];
    answerAndClose(socket, status, error);
  });
  // A CONNECT names a host, not a path here (this is no proxy): Node, with no listener, closed it unanswered.
  // The socket is the listener's alone from here, out of the server's timeouts and of its closing: a reset with
  // no 'error' listener would crash the process. What follows the CONNECT is read and dropped, so the client's
  // close ends the socket. A response still owed to an earlier request on the socket would take the 404 for
  // its own: closed instead.
  server.on('connect', (_req: IncomingMessage, socket: Duplex & { _httpMessage?: ServerResponse | null }) => {
    socket.on('error', () => socket.destroy());
    if (socket._httpMessage) {
      socket.destroy();
      return;
    }
    socket.resume();
    answerAndClose(socket, 404, 'not_found');
  });
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify({ ok: false, error: 'expectation_failed' });
    res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  });
}

/**
 * Writes the answer and half-closes. A client that never closes its side held the socket for good (out of the
 * server's timeouts: Node's own answers destroyed it), and shutdown waited on it: destroyed after
 * CLOSE_AFTER_ANSWER_MS whatever the client does.
 */
function answerAndClose(socket: Duplex, status: number, error: string): void {
  const late = setTimeout(() => socket.destroy(), CLOSE_AFTER_ANSWER_MS).unref();
  socket.once('close', () => clearTimeout(late));
  const body = JSON.stringify({ ok: false, error });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
