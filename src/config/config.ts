import { ADDRESS_PATTERN } from '../common/address';
import { MAX_CHAIN_ID } from '../modules/chain/asset-id';
import { MAX_PASSWORD_COST, PASSWORD_COST } from '../modules/portal/password';

/**
 * The whole configuration, parsed once at boot from the environment (DESIGN §2). Nothing else reads
 * process.env. A bad or missing value stops the process with a message naming the variable.
 */
export type Mode = 'test' | 'live';
export const MODES: readonly Mode[] = ['test', 'live'];

/**
 * How deep a transfer must be before it pays (DESIGN §7 "Finality"): a number of blocks, counting the
 * transfer's own block as the first (DESIGN §3), or `finalized`, the node's finalized block.
 */
export type Confirmations = number | 'finalized';

export interface ChainConfig {
  rpcUrl: string;
  chainId: bigint;
  tokenAddress: string;
  confirmations: Confirmations;
}

export interface AppConfig {
  /**
   * True unless NODE_ENV is exactly `development` or `test`: production rules (required secrets, no
   * development defaults) apply to any other value, unset and misspelt included.
   */
  production: boolean;
  databaseUrl: string;
  /** Postgres connections each process pools (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  /** A pooled query unanswered this long closes its connection (DATABASE_QUERY_TIMEOUT_MS; src/database/data-source.ts). */
  databaseQueryTimeoutMs: number;
  redisUrl: string;
  port: number;
  adminPort: number;
  adminHost: string;
  adminToken: string;
  publicUrl: string;
  /** Session cookies carry Secure: PUBLIC_URL's scheme is https (parsed, so `HTTPS://` counts too). */
  secureCookies: boolean;
  payUrl: string;
  keyPrefix: string;
  chains: Partial<Record<Mode, ChainConfig>>;
  /** Lower-case fiat code → fiat units per one token, as a decimal string. */
  rates: Record<string, string>;
  webhookRetryDelaysMs: number[];
  webhookMaxAttempts: number;
  webhookTimeoutMs: number;
  /** Deliveries of one partner in flight at once across every worker; the rest wait without spending attempts. */
  webhookPartnerConcurrency: number;
  /** How often the webhook outbox is re-driven (due events without a job, attempts whose worker died). */
  webhookRedriveMs: number;
  /**
   * Past WEBHOOK_TIMEOUT_MS, how long an attempt may take to be claimed and recorded: its partner slot is leased
   * for the deadline plus this, and an attempt 'delivering' longer than that is taken for stalled (its worker died).
   */
  webhookStallMarginMs: number;
  /**
   * The scrypt cost (log2 N) of new portal password hashes. Below the default only in development and tests,
   * so a test can hash quickly; stored hashes carry their own cost, so verification does not depend on it.
   */
  portalPasswordCost: number;
  latePaymentGraceMinutes: number;
  webhookAllowPrivateUrls: boolean;
  /** Keys the HMAC that derives onboarding tokens, so the database alone cannot produce a valid link. */
  onboardingTokenSecret: string;
  /** How long an onboarding link works after it was issued; a read of the merchant after that issues a new one. */
  onboardingLinkTtlHours: number;
  /** 32-byte key (AES-256-GCM) for secrets stored at rest; the previous one while a key rotation runs. */
  secretKey: Buffer;
  secretKeyPrevious: Buffer | null;
  /** Express's `trust proxy`: false, a hop count, or a list of proxy addresses/subnets. */
  trustProxy: false | number | string;
  /** Multiplies every per-minute rate limit; the bench raises it. */
  rateLimitScale: number;
  /** Calls per minute per client address on each public page route. */
  publicRateLimit: number;
  /** Requests per minute through one merchant's handle page, from every address together (HandlePageService). */
  handleRequestRateLimit: number;
  /** Of those, the requests one client address (IPv6 by /64) makes through one handle per minute. */
  handleAddressRateLimit: number;
  /** Partner API calls without a valid key per minute per client address; past it → 429 before any key lookup. */
  authFailureRateLimit: number;
  /** How long an API key record is cached in process; revocation also evicts it at once through the change feed (Postgres NOTIFY). */
  apiKeyCacheMs: number;
  /** API key records cached in process at most (the oldest load goes first); unknown keys get a fifth of this apart. */
  apiKeyCacheMaxEntries: number;
  /** Prefix of every Redis key and BullMQ queue, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  /** pino level: fatal, error, warn, info, debug, trace or silent. Successful HTTP calls are logged at debug. */
  logLevel: string;
  /** Worker-only processes serve /health/* and /metrics here, on ADMIN_HOST (the API serves them on its listeners). */
  workerAdminPort: number;
  /** An HTTP JSON rate source (optional) and the dotted path to its currency → rate object. */
  ratesSourceUrl: string | null;
  ratesSourcePath: string;
  ratesRefreshIntervalMs: number;
  /**
   * A rate from any source but the static RATES prices no new request once it is older than this (by
   * Postgres's clock): a source that stopped answering must not price requests with its last rate for ever.
   */
  ratesMaxAgeMs: number;
  /** Bound on every JSON-RPC call, so an unreachable node backs off instead of hanging a job. */
  chainRpcTimeoutMs: number;
  /**
   * How long a retry round of undecided transfers keeps other rounds off the transfers it took: far above a
   * round (seconds, over 10 s seen under load); a round that dies is taken over once it ends. A round stops at
   * half of it and puts back what it did not try. One that outlives it anyway (a single slow try) only costs a
   * second try of the same transfers, whose decisions the lease then keeps from both being written.
   */
  chainRetryLeaseMs: number;
  /** How often a verification waiting for confirmations or for its transaction looks again at the latest. */
  verifyPollMs: number;
  /** How often the worker reads each chain's tip; a new block re-runs waiting verifications at once. */
  headPollMs: number;
  /** A payer's hash the node does not know is looked up again after this, doubling each time… */
  verifyNotFoundBackoffMs: number;
  /** …until it has been unknown this long; then the request stays attached with a note. */
  verifyNotFoundGiveUpMs: number;
  /** How often the chain scan and the expiry sweep run. */
  chainScanIntervalMs: number;
  expirySweepIntervalMs: number;
  /** How often the worker re-reads verified claims that are not settled yet (DESIGN §7 "Finality"). */
  finalityCheckIntervalMs: number;
  /** Blocks one eth_getLogs call of the scan covers at most. */
  chainScanMaxBlocks: number;
  /** Charges of a plan that expire unpaid in a row before it pauses with reason unpaid (DESIGN §5). */
  planMaxMissed: number;
  /** How often the plan scheduler looks for due plans (a due charge must exist within 15 s). */
  planSchedulerIntervalMs: number;
  /** Due plans one scheduler run charges at most; the next run (seconds later) takes the rest. */
  planSchedulerBatch: number;
  /** Email over SMTP (DESIGN §6): `smtp://[user:pass@]host:port` or `smtps://`; null → no email is sent. */
  smtpUrl: string | null;
  mailFrom: string | null;
  /** SMS receipts through a Twilio-compatible API (DESIGN §6); null unless all four variables are set. */
  sms: SmsConfig | null;
  /** Notification retries (DESIGN §6): the wait after attempt n is base × 2^(n-1), capped at max… */
  notifyRetryBaseMs: number;
  notifyRetryMaxMs: number;
  /** …and no attempt is made later than this after the message was written: it is abandoned instead. */
  notifyGiveUpMs: number;
  /** Bound on one SMTP connection phase or SMS call; a claimed message's lease is three times it. */
  notifySendTimeoutMs: number;
  /** How often the notifications outbox is re-driven (due rows without a job, expired leases). */
  notifyRedriveMs: number;
}

export interface SmsConfig {
  apiUrl: string;
  accountSid: string;
  authToken: string;
  from: string;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`Configuration error: ${variable} ${message}`);
  }
}

type Env = Record<string, string | undefined>;

const DEV_ADMIN_TOKEN = 'dev-admin-token';
const DEV_ONBOARDING_SECRET = 'dev-onboarding-secret-change-me';
/** Public, so only for development and tests: 32 bytes as 64 hex characters. */
const DEV_SECRET_KEY = '6465762d7365637265742d6b65792d6e6f742d666f722d70726f64756374696f';
/** The only NODE_ENV values that get the development defaults above; anything else is treated as production. */
export const DEVELOPMENT_ENVS: readonly string[] = ['development', 'test'];
const REQUIRED_IN_PRODUCTION = ['ADMIN_TOKEN', 'ONBOARDING_TOKEN_SECRET', 'SECRET_KEY'] as const;

function str(env: Env, name: string, fallback?: string): string {
  const v = env[name];
  if (v === undefined || v === '') {
    if (fallback === undefined) throw new ConfigError(name, 'is required');
    return fallback;
  }
  return v;
}

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function url(env: Env, name: string, fallback: string, protocols = ['http:', 'https:']): string {
  const v = str(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${v}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${v}"`);
  }
  return v.replace(/\/+$/, '');
}

/**
 * The first path segments the public listener routes itself. The pay page is served at PAY_URL's own path too
 * (src/modules/pages/pay-url-alias.ts), so that path may not sit under one of them (`/api/v1/requests` would
 * turn the partner API's get into the pay page); `/pay` itself, and no path at all, are fine.
 */
const SERVED_PATHS = ['admin', 'api', 'assets', 'dashboard', 'docs', 'health', 'm', 'metrics', 'onboarding', 'pay', 'plan', 'portal', 'terms'];

function payUrl(env: Env, publicUrl: string): string {
  const v = url(env, 'PAY_URL', `${publicUrl}/pay`);
  const path = new URL(v).pathname.replace(/\/+$/, '').toLowerCase();
  const first = path.split('/')[1] ?? '';
  if (path !== '/pay' && SERVED_PATHS.includes(first)) {
    throw new ConfigError('PAY_URL', `its path may be /pay, none, or one outside the service's own routes (/${SERVED_PATHS.join(', /')}), got "${path}"`);
  }
  return v;
}

export function parseRates(raw: string, name = 'RATES'): Record<string, string> {
  const rates: Record<string, string> = {};
  for (const part of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([A-Za-z]{3}):(\d+(?:\.\d+)?)$/.exec(part);
    if (!m) throw new ConfigError(name, `entries must look like usd:1 or eur:0.92, got "${part}"`);
    if (/^0+(\.0+)?$/.test(m[2])) throw new ConfigError(name, `rate for ${m[1]} must be positive`);
    rates[m[1].toLowerCase()] = m[2];
  }
  if (Object.keys(rates).length === 0) throw new ConfigError(name, 'must name at least one currency');
  return rates;
}

/** A 32-byte key given as 64 hex characters or as base64 (standard or URL-safe, padding optional). */
export function parseSecretKey(raw: string, name: string): Buffer {
  const v = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(v)) {
    const key = Buffer.from(v.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === 32) return key;
  }
  throw new ConfigError(name, 'must be 32 bytes given as 64 hex characters or as base64 (e.g. `openssl rand -hex 32`)');
}

function chain(env: Env, mode: Mode): ChainConfig | undefined {
  const p = `CHAIN_${mode.toUpperCase()}_`;
  const rpc = env[`${p}RPC_URL`];
  if (!rpc) return undefined;
  const chainIdRaw = str(env, `${p}CHAIN_ID`);
  // Positive, and within what an asset_id names (src/modules/chain/asset-id.ts): a chain id 0 or past 2^63 − 1
  // gave requests an asset_id the service itself refuses to read back.
  if (!/^[1-9]\d{0,18}$/.test(chainIdRaw) || BigInt(chainIdRaw) > MAX_CHAIN_ID) {
    throw new ConfigError(`${p}CHAIN_ID`, `must be a positive integer up to ${MAX_CHAIN_ID}, got "${chainIdRaw}"`);
  }
  const token = str(env, `${p}TOKEN_ADDRESS`);
  if (!ADDRESS_PATTERN.test(token)) throw new ConfigError(`${p}TOKEN_ADDRESS`, `must be 0x plus 40 hex characters`);
  return {
    // HTTP only: the chain reader sends JSON-RPC over HTTP (ethers' FetchRequest), and a ws:// URL, accepted
    // until 2026-11-28, answered every call with "unsupported protocol": the mode started unreachable and
    // stayed so, pricing requests from stored token metadata that nothing could ever verify.
    rpcUrl: url(env, `${p}RPC_URL`, rpc),
    chainId: BigInt(chainIdRaw),
    tokenAddress: token.toLowerCase(),
    confirmations: confirmationsOf(env, `${p}CONFIRMATIONS`),
  };
}

/**
 * A positive whole number of blocks or the word `finalized`. Outside development and test there is no
 * default: how deep a payment must be is the operator's decision about the chain's reorg risk, never 1 by
 * accident.
 */
function confirmationsOf(env: Env, name: string): Confirmations {
  const raw = env[name];
  if (raw === undefined || raw === '') {
    if (!DEVELOPMENT_ENVS.includes(env.NODE_ENV ?? '')) {
      throw new ConfigError(name, 'is required for a configured mode outside development and test: a number of blocks or "finalized"');
    }
    return 1;
  }
  if (raw === 'finalized') return 'finalized';
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000) {
    throw new ConfigError(name, `must be a whole number of blocks from 1 to 1000 or "finalized", got "${raw}"`);
  }
  return Number(raw);
}

function sms(env: Env): SmsConfig | null {
  const names = ['SMS_API_URL', 'SMS_ACCOUNT_SID', 'SMS_AUTH_TOKEN', 'SMS_FROM'] as const;
  const set = names.filter((n) => env[n]);
  if (set.length === 0) return null;
  if (set.length < names.length) {
    throw new ConfigError(names.filter((n) => !env[n]).join(', '), `must be set with ${set.join(', ')} (SMS needs all four, or none)`);
  }
  return { apiUrl: url(env, 'SMS_API_URL', ''), accountSid: env.SMS_ACCOUNT_SID!, authToken: env.SMS_AUTH_TOKEN!, from: env.SMS_FROM! };
}

function delays(env: Env): number[] {
  const raw = str(env, 'WEBHOOK_RETRY_DELAYS_MS', '60000,300000,1800000,7200000,21600000,86400000');
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((s) => !/^\d+$/.test(s))) {
    throw new ConfigError('WEBHOOK_RETRY_DELAYS_MS', `must be a comma-separated list of milliseconds, got "${raw}"`);
  }
  return parts.map(Number);
}

/**
 * RATES_MAX_AGE_MS: at least two refresh intervals, so one late or failed refresh never refuses requests.
 * Unset, one hour (12 intervals of the default 5 minutes), or two intervals when those are longer.
 */
function ratesMaxAge(env: Env, refreshIntervalMs: number): number {
  const floor = 2 * refreshIntervalMs;
  const maxAge = int(env, 'RATES_MAX_AGE_MS', Math.max(3600000, floor), 1000, 604800000);
  if (maxAge < floor) {
    throw new ConfigError('RATES_MAX_AGE_MS', `must be at least twice RATES_REFRESH_INTERVAL_MS (${floor}), got ${maxAge}`);
  }
  return maxAge;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: Env): string {
  const v = str(env, 'LOG_LEVEL', 'info').toLowerCase();
  if (!LOG_LEVELS.includes(v)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  return v;
}

export function trustProxy(raw: string | undefined): false | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (!/^[0-9a-fA-F.:/, ]+$/.test(raw) && !['loopback', 'linklocal', 'uniquelocal'].some((w) => raw.includes(w))) {
    throw new ConfigError('TRUST_PROXY', `must be false, a hop count, or proxy addresses/subnets, got "${raw}"`);
  }
  return raw;
}

/**
 * SECRET_KEY and SECRET_KEY_PREVIOUS alone, by the rules loadConfig applies (the development key only when
 * NODE_ENV is development or test). For the migration that seals existing secrets, which must use exactly
 * the key the service will open them with.
 */
export function loadSecretKeys(env: Env = process.env): Pick<AppConfig, 'secretKey' | 'secretKeyPrevious'> {
  const production = !DEVELOPMENT_ENVS.includes(env.NODE_ENV ?? '');
  if (production && !env.SECRET_KEY) {
    const nodeEnv = env.NODE_ENV === undefined ? 'unset' : `"${env.NODE_ENV}"`;
    throw new ConfigError('SECRET_KEY', `is required: NODE_ENV is ${nodeEnv}, and development defaults apply only when it is exactly development or test`);
  }
  return {
    secretKey: parseSecretKey(str(env, 'SECRET_KEY', DEV_SECRET_KEY), 'SECRET_KEY'),
    secretKeyPrevious: env.SECRET_KEY_PREVIOUS ? parseSecretKey(env.SECRET_KEY_PREVIOUS, 'SECRET_KEY_PREVIOUS') : null,
  };
}

export function loadConfig(env: Env = process.env): AppConfig {
  // Exact match: an unset or misspelt NODE_ENV ("prod", "Development") must not start with public secrets.
  const production = !DEVELOPMENT_ENVS.includes(env.NODE_ENV ?? '');
  if (production) {
    const missing = REQUIRED_IN_PRODUCTION.filter((name) => !env[name]);
    if (missing.length > 0) {
      const nodeEnv = env.NODE_ENV === undefined ? 'unset' : `"${env.NODE_ENV}"`;
      throw new ConfigError(
        missing.join(', '),
        `${missing.length === 1 ? 'is' : 'are'} required: NODE_ENV is ${nodeEnv}, and development defaults apply only when it is exactly development or test`,
      );
    }
  }
  const publicUrl = url(env, 'PUBLIC_URL', 'http://localhost:3000');
  const adminToken = str(env, 'ADMIN_TOKEN', DEV_ADMIN_TOKEN);
  // A guessable token guards the whole admin surface in production; a local or test run may use any.
  if (production && adminToken.length < 12) throw new ConfigError('ADMIN_TOKEN', 'must be at least 12 characters when NODE_ENV is production');
  const onboardingTokenSecret = str(env, 'ONBOARDING_TOKEN_SECRET', DEV_ONBOARDING_SECRET);
  const { secretKey, secretKeyPrevious } = loadSecretKeys(env);
  const keyPrefix = str(env, 'KEY_PREFIX', 'prs');
  if (!/^[a-z][a-z0-9]{1,15}$/.test(keyPrefix)) throw new ConfigError('KEY_PREFIX', 'must be 2-16 lower-case letters or digits');
  const port = int(env, 'PORT', 3000, 0, 65535);
  const adminPort = int(env, 'ADMIN_PORT', 3001, 0, 65535);
  if (port !== 0 && port === adminPort) throw new ConfigError('ADMIN_PORT', 'must differ from PORT');
  const chains: Partial<Record<Mode, ChainConfig>> = {};
  for (const mode of MODES) {
    const c = chain(env, mode);
    if (c) chains[mode] = c;
  }
  const ratesRefreshIntervalMs = int(env, 'RATES_REFRESH_INTERVAL_MS', 300000, 1000, 86400000);
  const scaleRaw = str(env, 'RATE_LIMIT_SCALE', '1');
  if (!/^\d+(\.\d+)?$/.test(scaleRaw) || Number(scaleRaw) <= 0) {
    throw new ConfigError('RATE_LIMIT_SCALE', `must be a positive number, got "${scaleRaw}"`);
  }
  return {
    production,
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/prs', ['postgres:', 'postgresql:']),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 20, 1, 500),
    databaseQueryTimeoutMs: int(env, 'DATABASE_QUERY_TIMEOUT_MS', 30_000, 100, 3_600_000),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    port,
    adminPort,
    adminHost: str(env, 'ADMIN_HOST', '127.0.0.1'),
    adminToken,
    publicUrl,
    secureCookies: new URL(publicUrl).protocol === 'https:',
    payUrl: payUrl(env, publicUrl),
    keyPrefix,
    chains,
    rates: parseRates(str(env, 'RATES', 'usd:1')),
    webhookRetryDelaysMs: delays(env),
    webhookMaxAttempts: int(env, 'WEBHOOK_MAX_ATTEMPTS', 6, 1, 100),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 8000, 100, 120000),
    webhookPartnerConcurrency: int(env, 'WEBHOOK_PARTNER_CONCURRENCY', 10, 1, 1000),
    webhookRedriveMs: int(env, 'WEBHOOK_REDRIVE_MS', 15000, 100, 3600000),
    webhookStallMarginMs: int(env, 'WEBHOOK_STALL_MARGIN_MS', 30000, 1000, 3600000),
    portalPasswordCost: int(env, 'PORTAL_PASSWORD_COST', PASSWORD_COST, production ? PASSWORD_COST : 10, MAX_PASSWORD_COST),
    latePaymentGraceMinutes: int(env, 'LATE_PAYMENT_GRACE_MINUTES', 60, 0, 100000),
    webhookAllowPrivateUrls: bool(env, 'WEBHOOK_ALLOW_PRIVATE_URLS', false),
    onboardingTokenSecret,
    onboardingLinkTtlHours: int(env, 'ONBOARDING_LINK_TTL_HOURS', 168, 1, 8760),
    secretKey,
    secretKeyPrevious,
    rateLimitScale: Number(scaleRaw),
    trustProxy: trustProxy(env.TRUST_PROXY),
    publicRateLimit: int(env, 'PUBLIC_RATE_LIMIT', 300, 1),
    handleRequestRateLimit: int(env, 'HANDLE_REQUEST_RATE_LIMIT', 60, 1),
    handleAddressRateLimit: int(env, 'HANDLE_ADDRESS_RATE_LIMIT', 30, 1),
    authFailureRateLimit: int(env, 'AUTH_FAILURE_RATE_LIMIT', 60, 1),
    apiKeyCacheMs: int(env, 'API_KEY_CACHE_MS', 30000, 0, 3600000),
    apiKeyCacheMaxEntries: int(env, 'API_KEY_CACHE_MAX_ENTRIES', 10000, 5, 1000000),
    redisPrefix: str(env, 'REDIS_PREFIX', 'prs'),
    logLevel: logLevel(env),
    workerAdminPort: int(env, 'WORKER_ADMIN_PORT', 3002, 0, 65535),
    ratesSourceUrl: env.RATES_SOURCE_URL ? url(env, 'RATES_SOURCE_URL', env.RATES_SOURCE_URL) : null,
    ratesSourcePath: str(env, 'RATES_SOURCE_PATH', 'rates'),
    ratesRefreshIntervalMs,
    ratesMaxAgeMs: ratesMaxAge(env, ratesRefreshIntervalMs),
    chainRpcTimeoutMs: int(env, 'CHAIN_RPC_TIMEOUT_MS', 10000, 100, 120000),
    chainRetryLeaseMs: int(env, 'CHAIN_RETRY_LEASE_MS', 120000, 1000, 3600000),
    verifyPollMs: int(env, 'VERIFY_POLL_MS', 10000, 50, 600000),
    headPollMs: int(env, 'HEAD_POLL_MS', 500, 50, 600000),
    verifyNotFoundBackoffMs: int(env, 'VERIFY_NOT_FOUND_BACKOFF_MS', 5000, 50, 600000),
    verifyNotFoundGiveUpMs: int(env, 'VERIFY_NOT_FOUND_GIVE_UP_MS', 3600000, 100, 604800000),
    chainScanIntervalMs: int(env, 'CHAIN_SCAN_INTERVAL_MS', 5000, 100, 3600000),
    expirySweepIntervalMs: int(env, 'EXPIRY_SWEEP_INTERVAL_MS', 30000, 100, 3600000),
    chainScanMaxBlocks: int(env, 'CHAIN_SCAN_MAX_BLOCKS', 1000, 1, 100000),
    finalityCheckIntervalMs: int(env, 'FINALITY_CHECK_INTERVAL_MS', 15000, 100, 3600000),
    planMaxMissed: int(env, 'PLAN_MAX_MISSED', 2, 1, 1000),
    planSchedulerIntervalMs: int(env, 'PLAN_SCHEDULER_INTERVAL_MS', 5000, 100, 10000),
    planSchedulerBatch: int(env, 'PLAN_SCHEDULER_BATCH', 200, 1, 10000),
    smtpUrl: env.SMTP_URL ? url(env, 'SMTP_URL', '', ['smtp:', 'smtps:']) : null,
    mailFrom: env.MAIL_FROM || null,
    sms: sms(env),
    notifyRetryBaseMs: int(env, 'NOTIFY_RETRY_BASE_MS', 60000, 10, 86400000),
    notifyRetryMaxMs: int(env, 'NOTIFY_RETRY_MAX_MS', 3600000, 10, 86400000),
    notifyGiveUpMs: int(env, 'NOTIFY_GIVE_UP_MS', 86400000, 100, 604800000),
    notifySendTimeoutMs: int(env, 'NOTIFY_SEND_TIMEOUT_MS', 30000, 100, 600000),
    notifyRedriveMs: int(env, 'NOTIFY_REDRIVE_MS', 15000, 100, 3600000),
  };
}

export const APP_CONFIG = Symbol('APP_CONFIG');
