import type { OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import { ADDRESS_PATTERN, ZERO_ADDRESS } from '../../common/address';
import { ERROR_STATUS, type ErrorCode } from '../../common/errors';
import { MOMENT } from '../../common/http/timestamp';
import { PAGE_DEFAULT, PAGE_MAX } from '../../common/paging';
import { retryDelayMs, type RetrySchedule } from '../webhooks/delivery-policy';
import { WEBHOOK_USER_AGENT } from '../webhooks/payload';

/**
 * The OpenAPI 3.1 document of the partner API (spec partner-api-v1.md §2, §4–§8 and DESIGN §3), written by
 * hand as one typed object: the spec's tables map onto it line by line, which decorators spread over DTOs
 * and controllers would not show. test/e2e/ops-openapi.spec.ts holds it against the spec's lists and
 * against the routes and DTOs the service actually has, so drift fails a test.
 */

export interface OpenApiOptions {
  /** {base_url}: PUBLIC_URL. */
  publicUrl: string;
  /** `<service>` in key prefixes (KEY_PREFIX). */
  keyPrefix: string;
  /** What this deployment does with a webhook attempt: WEBHOOK_RETRY_DELAYS_MS, WEBHOOK_MAX_ATTEMPTS, WEBHOOK_TIMEOUT_MS. */
  webhooks: RetrySchedule & { timeoutMs: number };
}

/** What each error code means, for the document. Codes without an entry still appear in the enum. */
export const ERROR_DESCRIPTIONS: Partial<Record<ErrorCode, string>> = {
  invalid_request: 'A field is malformed, out of range, of the wrong type or unknown, or a query value is invalid; `errors` lists every bad field as {field, message}.',
  invalid_json: 'The body is not JSON.',
  invalid_idempotency_key: 'idempotency_key is not 32–64 characters of A-Z a-z 0-9 _ - (base64url or hex).',
  customer_name_required: 'payment_mode is `service` and customer_name is missing.',
  currency_mismatch: "fiat_currency_code differs from the merchant's effective currency; `expected_fiat_code` names it.",
  merchant_onboarding_incomplete: "The merchant's onboarding_status is incomplete.",
  merchant_mode_mismatch: "The key's mode (test/live) differs from the merchant's.",
  merchant_disabled: 'The merchant is disabled: it cannot get new payment requests (an idempotent replay still returns the original).',
  invalid_expiry_minutes: "expiry_minutes is not one of the partner's allowed values; `allowed_expiry_minutes` lists them.",
  unsupported_currency: "No rate is configured for the merchant's currency; `expected_fiat_code` names it.",
  invalid_tx_hash: 'Pay API: the transaction hash is malformed.',
  invalid_signature: 'Onboarding API: the wallet signature does not verify.',
  wallet_mismatch: 'Onboarding API: the signing wallet is not the one given at create.',
  wallet_required: 'Onboarding API: the wallet must be connected before completing.',
  terms_not_accepted: 'Onboarding API: accept_terms must be true.',
  unauthorized: 'Missing, malformed, unknown or revoked API key. The body is identical whatever was wrong.',
  insufficient_scope: 'The key lacks the scope of the endpoint; `required_scope` names it.',
  not_found: "Unknown route, or the object is missing, another partner's, or (merchants) of the other mode — indistinguishable.",
  cannot_cancel: 'Cancel when status is not `requested` or proof_status is not `none`; the current request object is in the body beside ok and error.',
  wallet_address_conflict: 'The wallet belongs to a merchant of another partner or of the other mode (wallet addresses are globally unique).',
  tx_hash_already_used: 'Pay API: the transaction already paid another request.',
  conflict: 'The change conflicts with the current state (e.g. a taken partner slug).',
  onboarding_link_expired: 'Onboarding API: the link is older than ONBOARDING_LINK_TTL_HOURS, or a newer one replaced it; reading the merchant shows a new onboarding_url.',
  payload_too_large: 'The body is over 64 KiB.',
  unsupported_media_type: 'A non-empty body whose Content-Type is not `application/json` (a charset parameter is fine), a missing Content-Type included. Calls without a body are unaffected.',
  rate_limited: 'The per-key, per-endpoint limit of this minute is used up; it resets at the start of the next minute. No rate-limit headers are sent.',
  internal_error: 'An unexpected failure; `request_id` identifies it in the service logs.',
  asset_unavailable: "The key mode's chain is not configured or is misconfigured (wrong chain id): no requests can be priced.",
  rate_source_unavailable: "The merchant's currency has a rate, but the rate source has not quoted it for longer than the service's maximum rate age: no request is priced with it until the source quotes it again (retry later). `fiat_currency` names the currency; `message` says so in words.",
};

const describe = (c: ErrorCode) => ERROR_DESCRIPTIONS[c] ?? `HTTP ${ERROR_STATUS[c]}`;

const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const nullable = (s: SchemaObject): SchemaObject => ({ ...s, type: [s.type as string, 'null'] });
const TIMESTAMP: SchemaObject = {
  type: 'string',
  format: 'date-time',
  description: 'ISO-8601, UTC, millisecond precision, `Z` suffix (e.g. 2025-01-31T12:00:00.000Z).',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
};
const UUID: SchemaObject = { type: 'string', format: 'uuid' };
/** A list's since/until: what the service reads (common/http/timestamp.ts), wider than RFC 3339's date-time. */
const MOMENT_SCHEMA: SchemaObject = {
  type: 'string',
  pattern: MOMENT.source,
  description: 'ISO 8601: a date (its midnight), or a date and time to the minute at least, with an optional fraction and zone (±15:59 at most); without a zone, UTC.',
};
const REQUEST_STATUS = ['requested', 'opened', 'expired', 'voided'];
const PROOF_STATUS = ['none', 'attached', 'verified'];

const paymentRequestProperties: Record<string, SchemaObject | ReferenceObject> = {
  ok: { type: 'boolean', const: true, description: 'true on success' } as SchemaObject,
  request_id: { ...UUID, description: 'Identifier of the request' },
  status: { type: 'string', enum: REQUEST_STATUS, description: 'See spec §3. A request with proof_status none is never shown as requested/opened after expires_at.' },
  proof_status: { type: 'string', enum: PROOF_STATUS },
  pay_page_url: { type: 'string', format: 'uri', description: 'PAY_URL/<request_id>; shared with the customer.' },
  expires_at: { ...TIMESTAMP, description: 'Expiry moment' },
  created_at: { ...TIMESTAMP, description: 'Creation moment' },
  proof_verified_at: nullable({ ...TIMESTAMP, description: 'null until verified' }),
  tx_hash: nullable({ type: 'string', pattern: '^0x[0-9a-f]{64}$', description: 'On-chain transaction hash; null until proof exists.' }),
  amount: {
    type: 'string',
    pattern: '^[0-9]+$',
    description:
      "Crypto amount in the token's base units (decimal digits). amount = ceil(fiat_amount × 10^token_decimals ÷ (rate × 10^fiat_exponent)), " +
      'computed exactly, with the rate (fiat units per token) snapshotted at creation; raised by the fewest base units that keep it unique ' +
      'among the merchant\'s open requests on the same asset. The payer must transfer exactly this amount.',
  },
  asset_id: { type: 'string', pattern: '^eip155:[0-9]+/erc20:0x[0-9a-f]{40}$', description: 'eip155:<chain_id>/erc20:<token_address>' },
  fiat_amount: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Amount in minor units, as submitted' },
  fiat_currency: { type: 'string', pattern: '^[a-z]{3}$', description: 'Lower-case ISO 4217 code' },
  account_id: { ...UUID, description: 'The merchant' },
  metadata: nullable({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'String key/value pairs as submitted; round-trips unchanged. null for requests the merchant created in its dashboard or through its handle page.',
  }),
  idempotent_replay: { type: 'boolean', const: true, description: 'Present, true, only when the response is a replay (spec §4.1).' } as SchemaObject,
};

const merchantProperties: Record<string, SchemaObject | ReferenceObject> = {
  ok: { type: 'boolean', const: true } as SchemaObject,
  merchant_id: { ...UUID, description: 'Used as account_id when creating requests' },
  email: nullable({ type: 'string' }),
  display_name: nullable({ type: 'string' }),
  business_name: nullable({ type: 'string' }),
  country: nullable({ type: 'string', description: 'ISO 3166-1 alpha-2' }),
  phone: nullable({ type: 'string' }),
  website: nullable({ type: 'string' }),
  instagram: nullable({ type: 'string' }),
  industry: nullable({ type: 'string' }),
  account_type: { type: 'string', enum: ['consumer', 'business'] },
  onboarding_status: { type: 'string', enum: ['complete', 'incomplete'] },
  wallet_address: nullable({ type: 'string', pattern: '^0x[0-9a-f]{40}$', description: 'Receiving address, lower case; null until set' }),
  display_currency: nullable({ type: 'string', pattern: '^[a-z]{3}$', description: "Preferred fiat display currency; the partner's default when none was given" }),
  home_portal: { type: 'string', description: 'The partner slug' },
  disabled: { type: 'boolean', description: 'Disabled merchants cannot get new payment requests.' },
  created_at: TIMESTAMP,
  test_mode: { type: 'boolean', description: 'Fixed at creation from the key prefix used' },
  onboarding_url: nullable({ type: 'string', format: 'uri', description: 'PUBLIC_URL/onboarding/<token>; null when onboarding_status is complete. A link works ONBOARDING_LINK_TTL_HOURS (default 168) after it was issued; a read after that shows a new link, and the old one answers 410 onboarding_link_expired.' }),
  idempotent_replay: { type: 'boolean', const: true, description: 'Present, true, only on a replayed create' } as SchemaObject,
};

const withoutReplay = (props: Record<string, unknown>) => Object.keys(props).filter((k) => k !== 'idempotent_replay');

const createRequestBody: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['account_id', 'fiat_amount_int'],
  // customer_name_required: service mode needs a customer_name.
  ...({ if: { required: ['payment_mode'], properties: { payment_mode: { const: 'service' } } }, then: { required: ['customer_name'] } } as SchemaObject),
  properties: {
    account_id: { ...UUID, description: 'A merchant assigned to the partner' },
    fiat_amount_int: {
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
      description: "Minor units of the merchant's effective currency (cents, paise; whole units for zero-decimal currencies such as yen).",
    },
    fiat_currency_code: {
      type: 'string',
      pattern: '^[A-Za-z]{3}$',
      description: "ISO 4217. An assertion, not an override: if it differs from the merchant's effective currency, 400 currency_mismatch with expected_fiat_code.",
    },
    memo: { type: 'string', maxLength: 500, description: 'Shown to the customer on the pay page (a handle request\'s memo, its visitor\'s note to the merchant, is not)' },
    idempotency_key: {
      type: 'string',
      minLength: 32,
      maxLength: 64,
      pattern: '^[A-Za-z0-9_-]{32,64}$',
      description: 'base64url charset or hex; otherwise 400 invalid_idempotency_key. Scope: (partner, merchant, key). A replay returns the original with idempotent_replay: true.',
    },
    metadata: {
      type: 'object',
      maxProperties: 20,
      propertyNames: { maxLength: 40 },
      additionalProperties: { type: 'string', maxLength: 500 },
      description: 'String key/value pairs; at most 20 keys; keys at most 40 chars; values at most 500 chars.',
    } as SchemaObject,
    payment_mode: { type: 'string', enum: ['pos', 'service'], default: 'pos', description: '`service` is the spec\'s "the service" mode: customer_name required, default expiry 10080 minutes.' },
    customer_name: {
      type: 'string',
      maxLength: 200,
      pattern: '\\S',
      description: 'Required when payment_mode is service (else 400 customer_name_required); not blank (only spaces is the same 400).',
    },
    customer_email: { type: 'string', maxLength: 254, description: 'Used for receipts; a receipt is sent only when it is one plain address (local@domain)' },
    customer_phone: { type: 'string', maxLength: 50, description: 'Used for receipts' },
    expiry_minutes: {
      type: 'integer',
      minimum: 1,
      maximum: 5256000,
      description: "One of the partner-allowed values (else 400 invalid_expiry_minutes). Default: the partner's configuration in pos mode; 10080 (7 days) in service mode.",
    },
  },
};

const createMerchantBody: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  description: 'Every field is optional.',
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    display_name: { type: 'string', maxLength: 120 },
    business_name: { type: 'string', maxLength: 120 },
    country: { type: 'string', pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2, two upper-case letters' },
    phone: { type: 'string', maxLength: 32 },
    website: { type: 'string', maxLength: 200 },
    instagram: { type: 'string', maxLength: 200 },
    industry: { type: 'string', maxLength: 80 },
    display_currency: { type: 'string', pattern: '^[A-Za-z]{3}$', description: "ISO 4217; defaults to the partner's configured currency; must have a configured rate." },
    account_type: { type: 'string', enum: ['consumer', 'business'], default: 'consumer' },
    wallet_address: {
      type: 'string',
      pattern: ADDRESS_PATTERN.source,
      not: { const: ZERO_ADDRESS } as SchemaObject,
      description: 'Not the zero address (nobody holds its key). Stored lower case. Create is idempotent on it within the partner and key mode; another partner or mode → 409 wallet_address_conflict.',
    },
  },
};

const errorSchema: SchemaObject = {
  type: 'object',
  required: ['ok', 'error'],
  properties: {
    ok: { type: 'boolean', const: false } as SchemaObject,
    error: ref('ErrorCode'),
    errors: { type: 'array', items: ref('FieldError'), description: 'invalid_request (and field-specific 400s): every bad field' },
    expected_fiat_code: { type: 'string', description: 'currency_mismatch, unsupported_currency' },
    fiat_currency: { type: 'string', description: 'rate_source_unavailable: the currency that cannot be priced now, lower case' },
    message: { type: 'string', description: 'rate_source_unavailable: e.g. "exchange rates for EUR are unavailable; try again later"' },
    required_scope: { type: 'string', enum: ['requests:read', 'requests:write', 'merchants:read', 'merchants:write'], description: 'insufficient_scope' },
    allowed_expiry_minutes: { type: 'array', items: { type: 'integer' }, description: 'invalid_expiry_minutes' },
    request_id: { type: 'string', description: 'internal_error: the id of the failed call in the service logs' },
  },
};

/** An error response whose `error` is one of `codes` (all of one HTTP status). */
function errorResponse(codes: ErrorCode[], schema: SchemaObject | ReferenceObject = ref('Error')): ResponseObject {
  return {
    description: codes.map((c) => `\`${c}\`: ${describe(c)}`).join('\n\n'),
    content: {
      'application/json': {
        schema: { allOf: [schema, { type: 'object', properties: { error: { type: 'string', enum: codes } } }] },
        example: { ok: false, error: codes[0] },
      },
    },
  };
}

/** Responses of an operation: the success ones given, plus the errors grouped by their HTTP status. */
function responses(success: Record<string, ResponseObject>, codes: ErrorCode[]): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = { ...success };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = list.includes('cannot_cancel') ? errorResponse(list, ref('CannotCancelError')) : errorResponse(list);
  }
  return out;
}

/** Every partner endpoint may answer these. */
const COMMON: ErrorCode[] = ['unauthorized', 'insufficient_scope', 'rate_limited', 'internal_error'];
const BODY: ErrorCode[] = ['invalid_json', 'payload_too_large', 'unsupported_media_type'];

const json = (schema: SchemaObject | ReferenceObject, description: string): ResponseObject => ({
  description,
  content: { 'application/json': { schema } },
});

function op(o: {
  id: string;
  tag: string;
  summary: string;
  description: string;
  scope: string;
  limit: number;
  params?: ParameterObject[];
  body?: ReferenceObject;
  success: Record<string, ResponseObject>;
  errors: ErrorCode[];
}): OperationObject {
  return {
    operationId: o.id,
    tags: [o.tag],
    summary: o.summary,
    description: `${o.description}\n\nScope \`${o.scope}\`. Rate limit: ${o.limit} calls per minute per key.`,
    security: [{ apiKey: [] }],
    parameters: o.params,
    requestBody: o.body ? { required: true, content: { 'application/json': { schema: o.body } } } : undefined,
    responses: responses(o.success, [...o.errors, ...COMMON]),
    'x-required-scope': o.scope,
    'x-rate-limit-per-minute': o.limit,
  } as OperationObject;
}

const idParam = (description: string): ParameterObject => ({ name: 'id', in: 'path', required: true, schema: UUID, description });
const query = (name: string, schema: SchemaObject, description: string): ParameterObject => ({ name, in: 'query', required: false, schema, description });
const pageParams: ParameterObject[] = [
  query('limit', { type: 'integer', minimum: 1, maximum: PAGE_MAX, default: PAGE_DEFAULT }, `Page size; at most ${PAGE_MAX} (${PAGE_MAX + 1} is a 400, not clamped).`),
  query('offset', { type: 'integer', minimum: 0, maximum: 2147483647, default: 0 }, 'Rows to skip. Paging by a moving `since` is safe under concurrent creation; stepping offset can skip rows.'),
];

/**
 * Routes the service registers that this document leaves out, by path prefix, and why: none is callable with a
 * partner API key. test/e2e/ops-openapi.spec.ts walks the running app's routes and fails on a route that is neither
 * documented nor under one of these prefixes (and on a prefix that no longer matches a route).
 */
export const NOT_DOCUMENTED: Array<{ prefix: string; reason: string }> = [
  { prefix: '/api/v1/openapi.json', reason: 'This document itself, as JSON.' },
  { prefix: '/docs', reason: 'This document rendered by Swagger UI, and its static assets.' },
  { prefix: '/health/', reason: 'Liveness and readiness probes for the orchestrator (README "Endpoints", docs/operations.md).' },
  { prefix: '/metrics', reason: 'Prometheus metrics; admin listener only (docs/operations.md).' },
  { prefix: '/admin/', reason: 'The operator API and queue board: admin listener only, authenticated by ADMIN_TOKEN or the board credentials, not a partner key (README "Endpoints").' },
  { prefix: '/portal', reason: 'The partner portal: HTML pages and form posts under a portal sign-in session (README "Partner portal").' },
  { prefix: '/pay/', reason: "The customer's pay page and the JSON calls its own script makes (no key; the request id is the capability)." },
  { prefix: '/onboarding/', reason: "The merchant's onboarding page and the JSON calls its own script makes (the onboarding token is the capability)." },
  { prefix: '/dashboard', reason: "The merchant dashboard: pages and the JSON calls its own script makes under the merchant's wallet sign-in session." },
  { prefix: '/m/', reason: "A merchant's public handle page and the JSON calls its own script makes." },
  { prefix: '/plan/', reason: "A payer's recurring-plan page and the JSON call its own script makes (the plan token is the capability)." },
  { prefix: '/assets/', reason: "Scripts and styles of the service's own pages." },
  { prefix: '/terms/', reason: 'The terms page shown during onboarding.' },
];

export function buildOpenApi(opts: OpenApiOptions): OpenAPIObject & { 'x-not-documented': typeof NOT_DOCUMENTED } {
  const p = opts.keyPrefix;
  const request = ref('PaymentRequest');
  const merchant = ref('Merchant');

  const createMerchant = (id: string, alias: boolean) =>
    op({
      id,
      tag: 'merchants',
      summary: alias ? 'Create a merchant (accounts alias)' : 'Create a merchant',
      description:
        (alias ? 'The same operation as POST /api/v1/merchants, under the accounts name (same rate-limit bucket). ' : '') +
        'Creates a shell merchant with onboarding_status incomplete and an onboarding_url. Idempotent on wallet_address within the partner and key mode (200 with idempotent_replay: true).',
      scope: 'merchants:write',
      limit: 30,
      body: ref('CreateMerchantBody'),
      success: {
        '201': json(merchant, 'Created'),
        '200': json(merchant, 'Idempotent replay: the merchant that already has this wallet, with idempotent_replay: true'),
      },
      errors: ['invalid_request', ...BODY, 'wallet_address_conflict'],
    });
  const listMerchants = (id: string, alias: boolean) =>
    op({
      id,
      tag: 'merchants',
      summary: alias ? 'List merchants (accounts alias)' : 'List merchants',
      description: (alias ? 'The same operation as GET /api/v1/merchants. ' : '') + "The key's partner and mode only; ordered by created_at, then id.",
      scope: 'merchants:read',
      limit: 60,
      params: [
        query('onboarding_status', { type: 'string', enum: ['complete', 'incomplete'] }, 'Filter'),
        query('disabled', { type: 'string', enum: ['true', 'false'] }, 'Filter'),
        ...pageParams,
      ],
      success: { '200': json(ref('MerchantList'), 'A page of merchants') },
      errors: ['invalid_request'],
    });
  const getMerchant = (id: string, alias: boolean) =>
    op({
      id,
      tag: 'merchants',
      summary: alias ? 'Get a merchant (accounts alias)' : 'Get a merchant',
      description: (alias ? 'The same operation as GET /api/v1/merchants/{id}. ' : '') + "404 when missing, another partner's or of the other key mode (indistinguishable).",
      scope: 'merchants:read',
      limit: 60,
      params: [idParam('merchant_id')],
      success: { '200': json(merchant, 'The merchant') },
      errors: ['not_found'],
    });

  return {
    openapi: '3.1.0',
    info: {
      title: 'Payment Request Service — Partner API',
      version: '1.0.0',
      description: [
        'Payment requests paid in an ERC-20 stablecoin from any EVM wallet, verified on-chain, with HMAC-signed webhooks.',
        '',
        `**Authentication.** Every call carries \`Authorization: Bearer <API_KEY>\`. Keys look like \`${p}_test_…\` (test mode) or \`${p}_live_…\` (live mode); the prefix fixes the mode, and test and live data never mix. Scopes: requests:read, requests:write, merchants:read, merchants:write.`,
        '',
        '**Bodies.** JSON both ways (send `Content-Type: application/json`; a body of any other type, or without one, gets 415 unsupported_media_type). Success bodies carry `ok: true`, error bodies `ok: false` and `error` (see the ErrorCode schema). Unknown body fields are rejected (400 invalid_request).',
        '',
        '**Limits.** Per key and endpoint, per clock minute (see each operation); the 429 carries no rate-limit headers. Back off from 60 s with jitter.',
        '',
        'All routes are served at {base_url} and at the administrative {admin_url} alike.',
        '',
        '**Not in this document.** Only the partner API (every route under /api/v1, called with a partner key) is described here. ' +
          "The service's own pages and the JSON calls their scripts make (pay, onboarding, merchant dashboard, handle and plan pages, the partner portal), " +
          'the operator API under /admin, health probes and metrics are none of them called with a partner key and are not described here; ' +
          '`x-not-documented` lists their path prefixes and why.',
      ].join('\n'),
    },
    'x-not-documented': NOT_DOCUMENTED,
    servers: [{ url: opts.publicUrl, description: '{base_url}' }],
    tags: [
      { name: 'requests', description: 'Payment requests (spec §4.1–§4.4)' },
      { name: 'merchants', description: 'Merchants, also named accounts (spec §4.5–§4.8)' },
    ],
    security: [{ apiKey: [] }],
    paths: {
      '/api/v1/requests/create': {
        post: op({
          id: 'createRequest',
          tag: 'requests',
          summary: 'Create a payment request',
          description:
            'Checks, in order: auth, scope, rate limit, body, merchant ownership (404) and mode (400 merchant_mode_mismatch), idempotent replay, then onboarding, disabled, currency, expiry.',
          scope: 'requests:write',
          limit: 60,
          body: ref('CreateRequestBody'),
          success: {
            '201': json(request, 'Created'),
            '200': json(request, 'Idempotent replay: the original request unchanged, with idempotent_replay: true'),
          },
          errors: [
            'invalid_request', 'invalid_idempotency_key', 'customer_name_required', 'currency_mismatch', 'merchant_onboarding_incomplete',
            'merchant_mode_mismatch', 'merchant_disabled', 'invalid_expiry_minutes', 'unsupported_currency', ...BODY, 'not_found', 'asset_unavailable',
            'rate_source_unavailable',
          ],
        }),
      },
      '/api/v1/requests/{id}': {
        get: op({
          id: 'getRequest',
          tag: 'requests',
          summary: 'Get a payment request',
          description: "404 not_found when the id does not exist or belongs to another partner (indistinguishable).",
          scope: 'requests:read',
          limit: 60,
          params: [idParam('request_id')],
          success: { '200': json(request, 'The request') },
          errors: ['not_found'],
        }),
      },
      '/api/v1/requests': {
        get: op({
          id: 'listRequests',
          tag: 'requests',
          summary: 'List payment requests',
          description: "The key's partner and mode only; ordered by created_at ascending, then id. Malformed or out-of-range query values are a 400, never clamped.",
          scope: 'requests:read',
          limit: 60,
          params: [
            query('status', { type: 'string', enum: REQUEST_STATUS }, 'Filter'),
            query('proof_status', { type: 'string', enum: PROOF_STATUS }, 'Filter'),
            query('account_id', UUID, 'Filter: a merchant of the partner'),
            query('since', MOMENT_SCHEMA, 'created_at >= since (use the created_at of the last item seen as a cursor)'),
            query('until', MOMENT_SCHEMA, 'created_at < until'),
            ...pageParams,
          ],
          success: { '200': json(ref('RequestList'), 'A page of requests') },
          errors: ['invalid_request'],
        }),
      },
      '/api/v1/requests/{id}/cancel': {
        post: op({
          id: 'cancelRequest',
          tag: 'requests',
          summary: 'Cancel (void) a payment request',
          description:
            'No body (an empty JSON object is one; a body with any field is 400 invalid_request, nothing cancelled). ' +
            'Only while status is requested and proof_status is none; otherwise 409 cannot_cancel with the current request in the body.',
          scope: 'requests:write',
          limit: 60,
          params: [idParam('request_id')],
          success: { '200': json(request, 'The updated request, status voided') },
          errors: ['invalid_request', ...BODY, 'not_found', 'cannot_cancel'],
        }),
      },
      '/api/v1/merchants': { post: createMerchant('createMerchant', false), get: listMerchants('listMerchants', false) },
      '/api/v1/merchants/{id}': { get: getMerchant('getMerchant', false) },
      '/api/v1/accounts': { post: createMerchant('createAccount', true), get: listMerchants('listAccounts', true) },
      '/api/v1/accounts/{id}': { get: getMerchant('getAccount', true) },
    },
    webhooks: {
      'payment.proof_attached': webhook('payment.proof_attached', 'A payer submitted a transaction hash; not yet verified on-chain. Optional to handle.', opts.webhooks),
      'payment.proof_verified': webhook('payment.proof_verified', 'The on-chain transfer is verified and the merchant has received the funds.', opts.webhooks),
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: `A partner API key: \`${p}_test_…\` or \`${p}_live_…\`.` },
      },
      schemas: {
        PaymentRequest: {
          type: 'object',
          description: 'The payment request object (spec §2.1): returned by create, get, cancel, and as items of the list.',
          required: withoutReplay(paymentRequestProperties),
          properties: paymentRequestProperties,
        },
        Merchant: {
          type: 'object',
          description: 'The merchant object (spec §2.2): every merchant endpoint returns this shape.',
          required: withoutReplay(merchantProperties),
          properties: merchantProperties,
        },
        CreateRequestBody: createRequestBody,
        CreateMerchantBody: createMerchantBody,
        RequestList: listEnvelope('requests', 'PaymentRequest'),
        MerchantList: listEnvelope('merchants', 'Merchant'),
        ErrorCode: {
          type: 'string',
          enum: Object.keys(ERROR_STATUS),
          description: (Object.keys(ERROR_STATUS) as ErrorCode[])
            .map((c) => `- \`${c}\` (HTTP ${ERROR_STATUS[c]}): ${describe(c)}`)
            .join('\n'),
        },
        FieldError: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
        Error: errorSchema,
        CannotCancelError: {
          description: '409 cannot_cancel: the current request object sits beside ok: false and error.',
          allOf: [
            ref('Error'),
            { type: 'object', required: withoutReplay(paymentRequestProperties).filter((k) => k !== 'ok'), properties: omit(paymentRequestProperties, ['ok', 'idempotent_replay']) },
          ],
        },
        WebhookPayload: {
          type: 'object',
          description: 'Spec §6.3, plus test_mode. Fields reflect the stored request at each attempt; event, delivery_id and timestamp are fixed when the event is recorded.',
          required: ['event', 'delivery_id', 'partner_id', 'request_id', 'account_id', 'proof_status', 'proof_source', 'tx_hash', 'payer_address', 'metadata', 'timestamp', 'test_mode'],
          properties: {
            event: { type: 'string', enum: ['payment.proof_attached', 'payment.proof_verified'] },
            delivery_id: { ...UUID, description: 'Unique per delivery event; identical across retries. Receivers must be idempotent on it.' },
            partner_id: UUID,
            request_id: UUID,
            account_id: UUID,
            proof_status: { type: 'string', enum: ['attached', 'verified'] },
            proof_source: nullable({ type: 'string', description: 'How proof was obtained (payer, chain_scan); informational' }),
            tx_hash: nullable({ type: 'string', pattern: '^0x[0-9a-f]{64}$' }),
            payer_address: nullable({ type: 'string', pattern: '^0x[0-9a-f]{40}$' }),
            metadata: nullable({ type: 'object', additionalProperties: { type: 'string' } }),
            timestamp: TIMESTAMP,
            test_mode: { type: 'boolean', description: 'The merchant\'s mode: one URL receives both modes.' },
          },
        },
      },
    },
  };
}

function listEnvelope(field: string, item: string): SchemaObject {
  return {
    type: 'object',
    required: ['ok', field, 'has_more', 'limit', 'offset'],
    properties: {
      ok: { type: 'boolean', const: true } as SchemaObject,
      [field]: { type: 'array', items: ref(item), description: 'Up to limit items, ordered by created_at ascending, then id' },
      has_more: { type: 'boolean', description: 'Whether another page exists: the signal to continue paging' },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
    },
  };
}

function omit<T extends Record<string, unknown>>(o: T, keys: string[]): T {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k))) as T;
}

/** 60000 → "1 min", 30960000 → "8 h 36 min", 200 → "200 ms". */
function duration(ms: number): string {
  const units: Array<[number, string]> = [[3_600_000, 'h'], [60_000, 'min'], [1000, 's'], [1, 'ms']];
  const parts: string[] = [];
  let left = ms;
  for (const [size, unit] of units) {
    const n = Math.floor(left / size);
    left -= n * size;
    if (n > 0) parts.push(`${n} ${unit}`);
  }
  return parts.length ? parts.join(' ') : '0 ms';
}

/**
 * The retries as this deployment makes them. Spec §6.5 lists six waits, the sixth (24 h) after attempt 6: with the
 * default of 6 attempts only the first five are ever waited, so "retried after … 24 h" overstated the last try by a day.
 */
function retryText(w: RetrySchedule): string {
  if (w.maxAttempts <= 1) return 'not retried (one attempt)';
  const waits = Array.from({ length: w.maxAttempts - 1 }, (_, i) => retryDelayMs(i + 1, w.delaysMs));
  const listed = waits.map(duration);
  const list = listed.length === 1 ? listed[0] : `${listed.slice(0, -1).join(', ')} and ${listed[listed.length - 1]}`;
  const total = waits.reduce((a, b) => a + b, 0);
  return `retried, ${w.maxAttempts} attempts in all, after waits of ${list} (the last attempt ${duration(total)} after the first), then abandoned`;
}

function webhook(event: string, fires: string, w: OpenApiOptions['webhooks']): Record<string, OperationObject> {
  return {
    post: {
      summary: event,
      description:
        `${fires}\n\nPOSTed to the partner's webhook URL while webhook_enabled is on. Verify \`x-service-signature\` (\`v1=<hex>,t=<unix>\`; ` +
        'during an unconfirmed secret rotation one v1= per active secret, the new first): HMAC-SHA256 with the secret (its 64 hex characters as text) ' +
        `over \`t + "." + raw body\`, hex; compare timing-safe; reject when t is more than 300 s away (with a 5xx, e.g. 503: each attempt is signed afresh, so a retry passes once your clock is right; a 4xx would abandon the delivery). 2xx within ${duration(w.timeoutMs)}: delivered. ` +
        `4xx except 429: abandoned. 429, 5xx, 3xx, timeout or network error: ${retryText(w)}.`,
      parameters: [
        { name: 'x-service-signature', in: 'header', required: true, schema: { type: 'string', pattern: '^(v1=[0-9a-f]{64},)+t=[0-9]+$' } },
        { name: 'x-service-event', in: 'header', required: true, schema: { type: 'string', enum: [event] } },
        { name: 'x-service-delivery', in: 'header', required: true, schema: UUID, description: 'The payload delivery_id' },
        { name: 'user-agent', in: 'header', required: true, schema: { type: 'string', enum: [WEBHOOK_USER_AGENT] } },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookPayload') } } },
      responses: {
        '200': { description: `Any 2xx within ${duration(w.timeoutMs)}: delivered (answer 2xx for an already handled delivery_id too).` },
      },
    },
  };
}
