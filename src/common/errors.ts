/**
 * Every error the API can answer with. Domain and application code throw AppError with one of these codes;
 * the exception filter maps it to its HTTP status and the {ok:false, error, ...} envelope.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_idempotency_key: 400,
  customer_name_required: 400,
  currency_mismatch: 400,
  merchant_onboarding_incomplete: 400,
  merchant_mode_mismatch: 400,
  merchant_disabled: 400,
  invalid_expiry_minutes: 400,
  unsupported_currency: 400,
  invalid_tx_hash: 400,
  tx_not_found: 400,
  tx_does_not_pay: 400,
  invalid_signature: 400,
  wallet_mismatch: 400,
  wallet_required: 400,
  terms_not_accepted: 400,
  invalid_handle: 400,
  test_mode_only: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_a_merchant: 403,
  csrf_failed: 403,
  not_found: 404,
  cannot_cancel: 409,
  wallet_address_conflict: 409,
  tx_hash_already_used: 409,
  proof_already_attached: 409,
  handle_taken: 409,
  plan_not_active: 409,
  currency_in_use: 409,
  conflict: 409,
  onboarding_link_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  rate_source_unavailable: 502,
  asset_unavailable: 503,
  chain_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    /** Extra top-level fields of the error body (expected_fiat_code, errors, the current request, …). */
    readonly extra: Record<string, unknown> = {},
    message?: string,
    /** Only where one code has another status on another surface (the dashboard's 401 invalid_signature). */
    status?: number,
  ) {
    super(message ?? code);
    this.status = status ?? ERROR_STATUS[code];
  }

  static invalid(errors: FieldError[]): AppError {
    return new AppError('invalid_request', { errors });
  }

  static notFound(): AppError {
    return new AppError('not_found');
  }
}
