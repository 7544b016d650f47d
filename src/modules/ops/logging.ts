import { randomUUID } from 'node:crypto';
import { PinoLogger } from 'nestjs-pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
import type { LevelWithSilent, Logger, LoggerOptions } from 'pino';
import { pinoHttp } from 'pino-http';
import { destination, stdSerializers, stdTimeFunctions } from 'pino';
import type { AppConfig } from '../../config/config';
import { UNMATCHED_ROUTE, matchedRoute } from './metrics.service';

/**
 * Structured JSON logs (pino through nestjs-pino). Three guards keep credentials out of them:
 *  1. nothing logs headers or bodies: a request is logged as its id, method, matched route and path (the
 *     query string dropped, the onboarding and plan tokens cut out), a response as its status;
 *  2. fields named like credentials are censored at any depth of what is logged (pino's own `redact`
 *     would do it too, but costs ~10 µs per request on child loggers even when nothing is written);
 *  3. every string that reaches a log line — messages, error messages and stacks — is scrubbed of things
 *     shaped like our credentials: API keys, 64-hex webhook secrets, bearer/basic values, onboarding path
 *     tokens, 65-byte signatures, and the literal ADMIN_TOKEN and ONBOARDING_TOKEN_SECRET.
 * Measured per request (micro-benchmark, this machine): ~2.5 µs when the closing line is not written,
 * ~10 µs when it is, plus the write itself. So successful responses are logged at `debug` (LOG_LEVEL=debug
 * shows them), 4xx at `info`, 5xx at `error`.
 */

export const REDACTED = '[REDACTED]';

/** Field names whose values are credentials, censored at any depth (case-insensitive). */
const SECRET_FIELDS = [
  'authorization', 'cookie', 'set-cookie', 'api_key', 'apiKey', 'key_hash', 'secret', 'webhook_secret',
  'previous_secret', 'webhook_previous_secret', 'password', 'password_hash', 'signature', 'x-service-signature',
  'token', 'onboarding_token', 'admin_token', 'adminToken', 'csrf', 'csrf_token', 'session',
];

const SECRET_KEYS = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));

const PATTERNS: Array<[RegExp, string]> = [
  // API keys: <service>_<mode>_<base64url secret>
  [/\b([a-z][a-z0-9]{1,15})_(test|live)_[A-Za-z0-9_-]{8,}/g, `$1_$2_${REDACTED}`],
  // The onboarding token is the path segment after /onboarding/ (page) or /onboarding/api/ (JSON API); a
  // plan's payer token likewise after /plan/ or /plan/api/. Both are capability URLs.
  // (`api` alone and route patterns such as `:token` are not tokens.)
  [/(\/(?:onboarding|plan)\/(?:api\/)?)(?!api(?:[^A-Za-z0-9_-]|$))(?!:)[^/?#\s"'<>{},;]+/g, `$1${REDACTED}`],
  // Webhook secrets (and any other bare 64-hex value; 0x-prefixed tx hashes are public and stay).
  [/(?<![0-9A-Za-z])[0-9a-fA-F]{64}(?![0-9A-Za-z])/g, REDACTED],
  // 65-byte ECDSA signatures (SIWE wallet proofs).
  [/0x[0-9a-fA-F]{130}(?![0-9A-Za-z])/g, REDACTED],
  [/\b(Bearer|Basic)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`],
  // Full URLs keep only their origin: RPC and rate-source URLs often carry a provider's key in the path or
  // query (ethers puts the request URL in its error messages), and credentials may sit in the authority.
  [/\b(https?|wss?):\/\/(?:[^\s"'<>@/]*@)?([^\s"'<>/?#]+)[^\s"'<>]*/gi, '$1://$2/…'],
];

/** A scrubber for free text: the credential shapes above plus the given literal secrets. */
export function makeScrubber(literals: string[] = []): (s: string) => string {
  const exact = literals.filter((l) => l && l.length >= 8);
  return (s: string): string => {
    let out = s;
    for (const lit of exact) if (out.includes(lit)) out = out.split(lit).join(REDACTED);
    for (const [re, rep] of PATTERNS) {
      re.lastIndex = 0;
      if (re.test(out)) {
        re.lastIndex = 0;
        out = out.replace(re, rep);
      }
    }
    return out;
  };
}

const defaultScrub = makeScrubber();

/** The request path as logged: query string dropped (it can carry anything), onboarding and plan tokens cut out. */
export function loggablePath(url: string | undefined, scrub: (s: string) => string = defaultScrub): string {
  if (!url) return '';
  const q = url.indexOf('?');
  return scrub(q === -1 ? url : url.slice(0, q));
}

function scrubDeep(value: unknown, scrub: (s: string) => string, depth: number): unknown {
  if (typeof value === 'string') return scrub(value);
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, scrub, depth + 1));
  // Only plain objects are copied: errors go through the err serializer (which scrubs), requests and
  // responses through theirs (which keep no headers), and other class instances are left to pino.
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.has(k.toLowerCase()) ? REDACTED : scrubDeep(v, scrub, depth + 1);
  return out;
}

interface LoggedRequest extends IncomingMessage {
  originalUrl?: string;
  route?: { path?: string };
}

/** Log level of the automatic line at the end of each request (LOG_LEVEL decides what is written). */
export function responseLevel(status: number, err?: Error): LevelWithSilent {
  if (err || status >= 500) return 'error';
  if (status >= 400) return 'info';
  // Successful calls are the hot path: one line each would cost more than the rest of the logging.
  return 'debug';
}

/** pino's own options: level, redaction, serializers and the scrubbing hook. Shared by HTTP and worker. */
export function pinoOptions(config: Pick<AppConfig, 'logLevel' | 'adminToken' | 'onboardingTokenSecret'>): LoggerOptions {
  const scrub = makeScrubber([config.adminToken, config.onboardingTokenSecret]);
  return {
    level: config.logLevel,
    base: { pid: process.pid },
    timestamp: stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    serializers: {
      // Runs for every request (pino-http binds req to a child logger up front): keep it trivial.
      req: (req: LoggedRequest) => ({ id: req.id, method: req.method }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
      err: (err: Error) => {
        const s = stdSerializers.err(err) as unknown as Record<string, unknown>;
        return scrubDeep(s, scrub, 0);
      },
    },
    hooks: {
      logMethod(args, method) {
        const clean = (args as unknown[]).map((a) => scrubDeep(a, scrub, 0));
        // Without a message pino takes err.message as is: give it the scrubbed one.
        const first = clean[0] as { err?: unknown } | undefined;
        const err = first instanceof Error ? first : first && typeof first === 'object' && first.err instanceof Error ? first.err : null;
        if (err && typeof clean[1] !== 'string') clean.splice(1, 0, scrub(err.message));
        return (method as (...a: unknown[]) => void).apply(this, clean);
      },
    },
  };
}

/** nestjs-pino parameters: pino-http with the request id set by jsonBody, no headers, one line per response. */
export function loggerParams(
  config: Pick<AppConfig, 'logLevel' | 'adminToken' | 'onboardingTokenSecret'>,
  stream?: NodeJS.WritableStream,
): Params {
  const base = pinoOptions(config);
  const options = {
    ...base,
    serializers: {
      ...base.serializers,
      reqId: (v: unknown) => (v && typeof v === 'object' ? (v as LoggedRequest).id : v),
    },
    ...accessLineOptions(config),
  };
  return {
    // nestjs-pino mounts nothing: its middleware would run every request inside an AsyncLocalStorage, and on
    // Node 20 the first such request turns on the promise hooks for the whole process, so that every promise
    // of the partner API's hot paths pays for them from then on (~6-10 % of a get's CPU). The access line of
    // the other routes is pageAccessLog's (bootstrap mounts it); lines logged while serving a request carry
    // its id because the caller passes it ({ reqId: req.id }), not through a context.
    forRoutes: [],
    // Synchronous writes to stdout: pino's default asynchronous stdout can write the tail of a line twice
    // when the process exits mid-write (seen in ops-logs.spec), and loses what is buffered on a crash. At
    // the default level a successful call writes nothing, so the cost is small.
    pinoHttp: [options, stream ?? destination({ dest: 1, sync: true })] as Params['pinoHttp'],
  };
}

/** pino-http's own options for the closing line of a request (the pino options are the root logger's). */
function accessLineOptions(config: Pick<AppConfig, 'logLevel' | 'adminToken' | 'onboardingTokenSecret'>) {
  const scrub = makeScrubber([config.adminToken, config.onboardingTokenSecret]);
  // Built only when the closing line is written: the matched route pattern and the scrubbed path.
  const route = (req: LoggedRequest) => {
    const r = matchedRoute(req);
    return r === UNMATCHED_ROUTE ? null : r;
  };
  const http = (req: LoggedRequest, res: ServerResponse) => ({
    method: req.method,
    route: route(req),
    path: loggablePath(req.originalUrl ?? req.url, scrub),
    status: res.statusCode,
  });
  const message = (req: LoggedRequest, res: ServerResponse) =>
    `${req.method} ${route(req) ?? loggablePath(req.originalUrl ?? req.url, scrub)} ${res.statusCode}`;
  return {
    // The serializers (the root logger's) take the raw request and response.
    wrapSerializers: false,
    // pino-http binds the request to a child logger under this key; loggerParams' reqId serializer reduces it
    // to the id, so every line of a request carries `"reqId":"…"` with one child logger per request (a
    // second child, as quietReqLogger makes, costs ~4 µs per request on this machine).
    customAttributeKeys: { req: 'reqId' },
    // jsonBody (src/common/http/body.ts) has set req.id already (x-request-id or a UUID); pino-http keeps it.
    genReqId: (req: LoggedRequest) => req.id ?? randomUUID(),
    customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) => responseLevel(res.statusCode, err),
    customSuccessMessage: message,
    customErrorMessage: message,
    customSuccessObject: (req: LoggedRequest, res: ServerResponse, val: Record<string, unknown>) => ({
      responseTime: val.responseTime,
      http: http(req, res),
    }),
    // A 5xx already has its error logged, with stack, by the exception filter; pino-http's stand-in error
    // ("failed with status code 500") would only add a second, meaningless stack.
    customErrorObject: (req: LoggedRequest, res: ServerResponse, err: Error, val: Record<string, unknown>) => ({
      responseTime: val.responseTime,
      http: http(req, res),
      ...(err && !/^failed with status code \d+$/.test(err.message) ? { err } : {}),
    }),
  };
}

const API_PATH = /^\/api\/v1(?:[/?#]|$)/i;

/**
 * The closing line of every request outside the partner API (pages, onboarding, portal, admin, health,
 * metrics), pino-http's, through the root logger: `{reqId, http, responseTime}` at the level its status
 * calls for. Unlike nestjs-pino's middleware it enters no AsyncLocalStorage (see loggerParams). The
 * partner API has apiAccessLog instead: pino-http's per-request child logger costs about a fifth of a
 * GET's CPU there.
 */
export function pageAccessLog(config: Pick<AppConfig, 'logLevel' | 'adminToken' | 'onboardingTokenSecret'>) {
  let http: ((req: IncomingMessage, res: ServerResponse, next: () => void) => void) | null = null;
  return (req: LoggedRequest, res: ServerResponse, next: () => void): void => {
    if (API_PATH.test(req.originalUrl ?? req.url ?? '')) return next();
    // Built on the first request: the root logger is nestjs-pino's, made when the application starts.
    http ??= pinoHttp({ ...accessLineOptions(config), logger: PinoLogger.root as unknown as Logger });
    http(req, res, next);
  };
}

/**
 * The closing line of a partner-API call, shaped like pino-http's for the other routes ({reqId, http,
 * responseTime}), at the level its status calls for — and nothing at all, not even a listener, when that
 * level is off (the default for 2xx).
 */
export function apiAccessLog(config: Pick<AppConfig, 'logLevel' | 'adminToken' | 'onboardingTokenSecret'>) {
  const scrub = makeScrubber([config.adminToken, config.onboardingTokenSecret]);
  const lowest = LEVEL_VALUES[config.logLevel as keyof typeof LEVEL_VALUES] ?? Infinity;
  return (req: LoggedRequest, res: ServerResponse, next: () => void): void => {
    if (lowest > LEVEL_VALUES.error) return next();
    const start = performance.now();
    res.once('finish', () => {
      const level = responseLevel(res.statusCode);
      if (LEVEL_VALUES[level as keyof typeof LEVEL_VALUES] < lowest) return;
      const r = matchedRoute(req);
      const route = r === UNMATCHED_ROUTE ? null : r;
      const path = loggablePath(req.originalUrl ?? req.url, scrub);
      PinoLogger.root[level as 'info']({
        reqId: req.id,
        responseTime: Math.round(performance.now() - start),
        http: { method: req.method, route, path, status: res.statusCode },
      }, `${req.method} ${route ?? path} ${res.statusCode}`);
    });
    next();
  };
}

const LEVEL_VALUES = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;
