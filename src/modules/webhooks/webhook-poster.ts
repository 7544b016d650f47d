import * as dns from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, Socket, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { WEBHOOK_USER_AGENT } from './payload';
import { forbiddenAddressReason, hostOf, parseWebhookUrl, WebhookUrlRejectedError } from './url-guard';

/**
 * One HTTP POST of a webhook attempt (spec §6.5): keep-alive transport, connect-time SSRF guard, one deadline,
 * bounded response, no redirects. Signing, payload and retry scheduling live elsewhere.
 */

export type PostErrorClass = 'timeout' | 'network' | 'forbidden_address' | 'redirect';

export interface PostOutcome {
  /**
   * The receiver's status when the attempt completed within the deadline (also set with errorClass
   * 'redirect'). Null when no complete response was obtained: a timeout or network error that happened after
   * the status line still reports null here (the status is mentioned in errorMessage), so that nobody can
   * mistake a timed-out 200 for a delivery.
   */
  statusCode: number | null;
  durationMs: number;
  errorClass: null | PostErrorClass;
  errorMessage?: string;
}

export interface WebhookPosterOptions {
  /** WEBHOOK_ALLOW_PRIVATE_URLS: when true, any address (loopback included) may be posted to, over http too. */
  allowPrivate: boolean;
  /** WEBHOOK_TIMEOUT_MS: one deadline for lookup, connect, TLS, request, response headers and body. */
  timeoutMs?: number;
  /** Response body bytes read (and discarded) at most; past it the connection is dropped. */
  maxResponseBytes?: number;
}

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 8000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const FORBIDDEN_CODE = 'ERR_WEBHOOK_FORBIDDEN_ADDRESS';
// Idle keep-alive sockets are closed after this, below the 5 s keep-alive timeout of Node servers, so we
// rarely write to a socket the receiver is closing. Node also honours a shorter `Keep-Alive: timeout=` hint,
// but only when this is non-zero.
const FREE_SOCKET_TIMEOUT_MS = 4000;
const MAX_REDIRECT_LOCATION_CHARS = 200;
const PARSED_URLS_MAX = 10_000;

export class ForbiddenAddressError extends Error {
  readonly code = FORBIDDEN_CODE;

  constructor(message: string) {
    super(message);
    this.name = 'ForbiddenAddressError';
  }
}

/**
 * Resolves like dns.lookup, then refuses when ANY address is forbidden, and hands net.connect only addresses
 * it checked: the socket connects to the very address judged here, so DNS rebinding between the URL check
 * at save time and delivery cannot slip an internal address through.
 */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    if (addresses.length === 0) {
      return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
    }
    // Not which address, nor its kind: the attempt log is the partner's to read (see assertWebhookUrlAllowed).
    if (addresses.some(({ address }) => forbiddenAddressReason(address) !== null)) {
      return callback(new ForbiddenAddressError(`${hostname} resolves to an address that is not public`), '');
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  });
};

type ConnectCallback = (err: Error | null, stream: Duplex) => void;

/**
 * net.connect skips the lookup hook for IP-literal hosts, so those are judged here; names go through
 * guardedLookup. Same shape as request-filtering-agent (which cannot be used: ESM-only, and its rule set
 * differs from isForbiddenAddress).
 */
function guardedConnection(
  options: http.ClientRequestArgs,
  callback: ConnectCallback | undefined,
  connect: (options: http.ClientRequestArgs, callback?: ConnectCallback) => Duplex | null | undefined,
): Duplex | null | undefined {
  const host = options.host ?? options.hostname ?? 'localhost';
  if (isIP(host) !== 0) {
    const why = forbiddenAddressReason(host);
    if (why !== null) {
      const err = new ForbiddenAddressError(`${host} is ${why}`);
      const socket = new Socket();
      if (callback) callback(err, socket);
      else process.nextTick(() => socket.destroy(err));
      return socket;
    }
  }
  return connect({ ...options, lookup: guardedLookup }, callback);
}

class GuardedHttpAgent extends http.Agent {
  override createConnection(options: http.ClientRequestArgs, callback?: ConnectCallback) {
    return guardedConnection(options, callback, (o, cb) => super.createConnection(o, cb));
  }
}

class GuardedHttpsAgent extends https.Agent {
  override createConnection(options: https.RequestOptions, callback?: ConnectCallback) {
    return guardedConnection(options, callback, (o, cb) => super.createConnection(o, cb));
  }
}

const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

function isForbidden(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === FORBIDDEN_CODE;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((k) => k.toLowerCase() === name);
}

export class WebhookPoster {
  private readonly allowPrivate: boolean;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly parsedUrls = new Map<string, URL>();

  constructor(opts: WebhookPosterOptions) {
    this.allowPrivate = opts.allowPrivate;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const agentOptions: http.AgentOptions = {
      keepAlive: true,
      keepAliveMsecs: 1000,
      timeout: FREE_SOCKET_TIMEOUT_MS,
      scheduling: 'lifo',
    };
    // One agent per scheme, for the life of the poster: sockets to a partner are reused across deliveries.
    this.httpAgent = this.allowPrivate ? new http.Agent(agentOptions) : new GuardedHttpAgent(agentOptions);
    this.httpsAgent = this.allowPrivate ? new https.Agent(agentOptions) : new GuardedHttpsAgent(agentOptions);
  }

  /** Closes pooled sockets (shutdown, tests). The poster stays usable; new sockets are opened on demand. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Nest calls this at shutdown, after the delivery worker has let its running attempts finish. */
  onApplicationShutdown(): void {
    this.close();
  }

  /** POSTs body to url. Never throws: every failure is an outcome. */
  async post(url: string, body: string, headers: Record<string, string>): Promise<PostOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let parsed: URL;
    try {
      parsed = this.parse(url);
    } catch (e) {
      const message = e instanceof WebhookUrlRejectedError ? e.reason : describe(e);
      return { statusCode: null, durationMs: elapsed(), errorClass: 'forbidden_address', errorMessage: message };
    }
    try {
      return await this.send(parsed, body, headers, started);
    } catch (e) {
      // send() resolves on every path it knows of; this is a last resort so that post() never rejects.
      return { statusCode: null, durationMs: elapsed(), errorClass: 'network', errorMessage: describe(e) };
    }
  }

  /**
   * parseWebhookUrl, remembered per URL: partners' URLs are few and every attempt posts to one. Only URLs that
   * pass are kept (a rejected one is judged again each time), and the URL objects are never modified.
   */
  private parse(url: string): URL {
    let parsed = this.parsedUrls.get(url);
    if (!parsed) {
      parsed = parseWebhookUrl(url, { allowPrivate: this.allowPrivate });
      if (this.parsedUrls.size >= PARSED_URLS_MAX) this.parsedUrls.delete(this.parsedUrls.keys().next().value!);
      this.parsedUrls.set(url, parsed);
    }
    return parsed;
  }

  private send(url: URL, body: string, headers: Record<string, string>, started: number): Promise<PostOutcome> {
    const isHttps = url.protocol === 'https:';
    const payload = Buffer.from(body, 'utf8');
    const finalHeaders: Record<string, string | number> = { ...headers };
    for (const k of Object.keys(finalHeaders)) if (k.toLowerCase() === 'content-length') delete finalHeaders[k];
    finalHeaders['content-length'] = payload.length;
    if (!hasHeader(headers, 'content-type')) finalHeaders['content-type'] = 'application/json';
    if (!hasHeader(headers, 'user-agent')) finalHeaders['user-agent'] = WEBHOOK_USER_AGENT;

    const requestOptions: http.RequestOptions = {
      method: 'POST',
      protocol: url.protocol,
      hostname: hostOf(url),
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: finalHeaders,
      agent: isHttps ? this.httpsAgent : this.httpAgent,
    };

    return new Promise<PostOutcome>((resolve) => {
      let settled = false;
      let current: http.ClientRequest | undefined;
      let retriedStaleSocket = false;

      const finish = (o: Omit<PostOutcome, 'durationMs'>, destroy = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ ...o, durationMs: Math.round(performance.now() - started) });
        if (destroy) current?.destroy();
      };

      // One deadline for everything, including a receiver that trickles its body: destroy the request.
      const deadline = setTimeout(() => {
        finish({ statusCode: null, errorClass: 'timeout', errorMessage: `no complete response within ${this.timeoutMs} ms` }, true);
      }, this.timeoutMs);

      const attempt = () => {
        let responded = false;
        let req: http.ClientRequest;
        try {
          req = (isHttps ? https : http).request(requestOptions);
        } catch (e) {
          // e.g. a header value with invalid characters
          finish({ statusCode: null, errorClass: 'network', errorMessage: describe(e) });
          return;
        }
        current = req;

        req.on('error', (err) => {
          if (settled) return;
          // A pooled socket the receiver closed while idle fails on first write. Retrying once on a fresh
          // socket is safe: receivers deduplicate on delivery_id (spec §6.5), and the deadline still holds.
          const code = (err as NodeJS.ErrnoException).code ?? '';
          if (!responded && req.reusedSocket && !retriedStaleSocket && RESET_CODES.has(code)) {
            retriedStaleSocket = true;
            attempt();
            return;
          }
          if (isForbidden(err)) finish({ statusCode: null, errorClass: 'forbidden_address', errorMessage: err.message });
          else finish({ statusCode: null, errorClass: 'network', errorMessage: describe(err) });
        });

        req.on('response', (res) => {
          responded = true;
          const status = res.statusCode ?? 0;
          const isRedirect = status >= 300 && status < 400;
          const outcome = (): Omit<PostOutcome, 'durationMs'> =>
            isRedirect
              ? {
                  statusCode: status,
                  errorClass: 'redirect',
                  errorMessage: `redirect not followed${
                    res.headers.location ? ` (location: ${String(res.headers.location).slice(0, MAX_REDIRECT_LOCATION_CHARS)})` : ''
                  }`,
                }
              : { statusCode: status, errorClass: null };

          // The body is read only to keep the connection reusable, and never past maxResponseBytes.
          let received = 0;
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (received > this.maxResponseBytes && !settled) {
              finish(outcome());
              res.destroy(); // drops this socket instead of draining an unbounded body
            }
          });
          res.on('end', () => finish(outcome()));
          res.on('error', (err) => {
            if (settled) return;
            finish({ statusCode: null, errorClass: 'network', errorMessage: `${describe(err)} (after status ${status})` });
          });
          res.on('close', () => {
            if (!res.complete && !settled) {
              finish({ statusCode: null, errorClass: 'network', errorMessage: `connection closed mid-body (after status ${status})` });
            }
          });
        });

        req.end(payload);
      };

      attempt();
    });
  }
}
