/**
 * @prs/webhook-verify — verify the signature of a Payment Request Service webhook delivery.
 *
 * Header format (spec §6.2, §6.4): `x-service-signature: v1=<hex>[,v1=<hex>…],t=<unix seconds>`.
 * Each v1 is HMAC-SHA256, keyed by the webhook secret exactly as shown in the portal (its 64 hex
 * characters used as text, not decoded), over `${t}.${rawBody}`. During a secret rotation a delivery
 * carries one v1 per active secret (new first); a match of any v1 against any of your secrets is enough.
 *
 * No dependencies beyond node:crypto.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';
export const EVENT_HEADER = 'x-service-event';
export const DELIVERY_HEADER = 'x-service-delivery';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookEventType = 'payment.proof_attached' | 'payment.proof_verified';

/** The payload of spec §6.3, plus `test_mode` (one URL receives the events of both modes). */
export interface WebhookEvent {
  event: WebhookEventType;
  /** Identical across retries of one event: deduplicate on it. */
  delivery_id: string;
  partner_id: string;
  request_id: string;
  /** The merchant. */
  account_id: string;
  proof_status: 'attached' | 'verified';
  proof_source: string | null;
  tx_hash: string | null;
  payer_address: string | null;
  metadata: Record<string, unknown> | null;
  /** ISO-8601, when the event was recorded. */
  timestamp: string;
  test_mode: boolean;
}

/**
 * The portal's "Send test event": signed like a delivery with the current secret(s), never retried nor logged,
 * and not an event of the API (spec §6.1 has two kinds): it carries no request.
 */
export interface WebhookPing {
  event: 'ping';
  delivery_id: string;
  partner_id: string;
  timestamp: string;
}

/** What a verified POST carries: a payment event, or the portal's test ping (answer it 2xx, act on nothing). */
export type WebhookDelivery = WebhookEvent | WebhookPing;

/** The body as frameworks hand it over: Express's express.raw() a Buffer, fetch-style ones an ArrayBuffer or a Uint8Array. */
export type RawBody = string | Buffer | ArrayBufferView | ArrayBuffer;

export type WebhookVerificationErrorCode =
  | 'malformed_header'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'invalid_body';

export class WebhookVerificationError extends Error {
  readonly code: WebhookVerificationErrorCode;

  constructor(code: WebhookVerificationErrorCode, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

export interface VerifyOptions {
  /** Largest accepted |t − now|, in seconds. Default 300 (spec §6.4). */
  toleranceSeconds?: number;
  /** Current time in unix seconds; defaults to the system clock. */
  now?: number;
}

const HEX_SIGNATURE = /^[0-9a-fA-F]{64}$/;
const UNIX_SECONDS = /^\d{1,15}$/;

function hmac(secret: string, t: number | string, rawBody: string | Buffer): Buffer {
  const mac = createHmac('sha256', secret);
  mac.update(`${t}.`, 'utf8');
  if (typeof rawBody === 'string') mac.update(rawBody, 'utf8');
  else mac.update(rawBody);
  return mac.digest();
}

function normaliseSecrets(secrets: string | string[]): string[] {
  const list = Array.isArray(secrets) ? secrets : [secrets];
  if (list.length === 0 || list.some((s) => typeof s !== 'string' || s.length === 0)) {
    // A programming or configuration error (e.g. an unset environment variable), not a bad delivery.
    throw new TypeError('webhook secret(s) must be one or more non-empty strings');
  }
  return list;
}

/**
 * Builds the `x-service-signature` value: one `v1=` per secret, in the given order, then `t=`.
 * The service signs this way; partners can use it to fabricate deliveries in their own tests.
 */
export function signWebhook(rawBody: string | Buffer, secrets: string[], t: number): string {
  const list = normaliseSecrets(secrets);
  if (!Number.isSafeInteger(t) || t < 0) throw new TypeError('t must be a non-negative integer (unix seconds)');
  const parts = list.map((secret) => `v1=${hmac(secret, t, rawBody).toString('hex')}`);
  parts.push(`t=${t}`);
  return parts.join(',');
}

interface ParsedHeader {
  t: number;
  tText: string;
  signatures: Buffer[];
}

function parseSignatureHeader(header: unknown): ParsedHeader {
  if (typeof header !== 'string' || header.trim() === '') {
    throw new WebhookVerificationError('malformed_header', `missing ${SIGNATURE_HEADER} header`);
  }
  const signatures: Buffer[] = [];
  const timestamps: string[] = [];
  for (const rawPart of header.split(',')) {
    const part = rawPart.trim();
    if (part === '') continue; // tolerate a stray or trailing comma
    const eq = part.indexOf('=');
    if (eq <= 0) throw new WebhookVerificationError('malformed_header', `malformed part "${part}"`);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 'v1') {
      if (!HEX_SIGNATURE.test(value)) {
        throw new WebhookVerificationError('malformed_header', 'a v1 signature is not 64 hex characters');
      }
      signatures.push(Buffer.from(value, 'hex'));
    } else if (key === 't') {
      timestamps.push(value);
    }
    // Other keys (future schemes) are ignored so that adding one later does not break verifiers.
  }
  if (timestamps.length !== 1) {
    throw new WebhookVerificationError('malformed_header', `expected exactly one t=, found ${timestamps.length}`);
  }
  const tText = timestamps[0];
  if (!UNIX_SECONDS.test(tText)) {
    throw new WebhookVerificationError('malformed_header', 't is not an integer number of unix seconds');
  }
  if (signatures.length === 0) {
    throw new WebhookVerificationError('malformed_header', 'no v1 signature');
  }
  return { t: Number(tText), tText, signatures };
}

/**
 * Verifies a delivery and returns its parsed payload.
 *
 * @param body the request body exactly as received (bytes or string), never a re-serialised object
 * @param signatureHeader the value of the `x-service-signature` header
 * @param secrets your webhook secret, or both secrets while a rotation is in progress
 * @throws WebhookVerificationError with code malformed_header | timestamp_out_of_tolerance |
 *         signature_mismatch | invalid_body
 */
export function verifyWebhook(
  body: RawBody,
  signatureHeader: string,
  secrets: string | string[],
  opts: VerifyOptions = {},
): WebhookDelivery {
  const list = normaliseSecrets(secrets);
  const rawBody = bytesOf(body);
  if (rawBody === null) {
    // Typically express.json() ran first and the raw bytes are gone.
    throw new WebhookVerificationError('invalid_body', 'raw body must be a string, Buffer, typed array, DataView or ArrayBuffer (use express.raw())');
  }
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  // |t − now| > NaN is false for every t: a tolerance or clock read from an unset setting (Number(undefined),
  // parseInt('')) would accept a delivery of any age. Like a missing secret, a configuration error.
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError('toleranceSeconds must be a finite number of seconds, 0 or more');
  }
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new TypeError('now must be a finite number of unix seconds');
  }
  const header = parseSignatureHeader(signatureHeader);

  // Sign with the t text as received, so that e.g. "t=0017…" cannot be normalised into a match.
  let matched = false;
  for (const secret of list) {
    const expected = hmac(secret, header.tText, rawBody);
    for (const candidate of header.signatures) {
      // Both are 32 bytes: the header parser only admits 64 hex characters.
      if (timingSafeEqual(expected, candidate)) matched = true;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError('signature_mismatch', 'no v1 signature matches the given secret(s)');
  }
  if (Math.abs(header.t - now) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `t=${header.t} differs from now (${now}) by more than ${tolerance} s`,
    );
  }

  let payload: unknown;
  try {
    payload = JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_body', 'body is not valid JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new WebhookVerificationError('invalid_body', 'body is not a JSON object');
  }
  return payload as WebhookDelivery;
}

/**
 * The bytes of a body as received, without a copy; null for anything else (a parsed object). Told by their
 * tag, not instanceof: an ArrayBuffer made in another realm (a vm context, a test environment) is one too.
 */
function bytesOf(body: unknown): string | Buffer | null {
  if (typeof body === 'string' || Buffer.isBuffer(body)) return body;
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const tag = Object.prototype.toString.call(body);
  if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') return Buffer.from(body as ArrayBuffer);
  return null;
}
