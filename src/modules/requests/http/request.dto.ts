import { Transform } from 'class-transformer';
import { CurrencyAssertion } from '../../../common/http/currency-assertion';
import { strictInt } from '../../../common/http/query';
import { IsTimestamp } from '../../../common/http/timestamp';
import { PAGE_MAX } from '../../../common/paging';
import {
  IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min, Validate, ValidateIf,
  ValidatorConstraint, type ValidatorConstraintInterface, type ValidationArguments,
} from 'class-validator';
import type { ErrorCode } from '../../../common/errors';
import type { CreateRequestInput, RequestListQuery } from '../application/requests.service';
import type { RequestSource } from '../domain/payment-request';
import { IDEMPOTENCY_KEY, metadataErrors, type PaymentMode } from '../domain/request-rules';
import { PROOF_STATUSES, REQUEST_STATUSES, type ProofStatus, type RequestStatus } from '../domain/transitions';

@ValidatorConstraint({ name: 'metadata' })
export class MetadataRule implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return metadataErrors(value).length === 0;
  }
  defaultMessage(args: ValidationArguments): string {
    return metadataErrors(args.value).map((e) => `${e.field} ${e.message}`).join('; ');
  }
}

/** Spec §4.1. Field-specific codes win over invalid_request when that field is at fault. */
export class CreateRequestDto {
  static nullIsAbsent = true;
  static fieldCodes: Record<string, ErrorCode | ((dto: CreateRequestDto) => ErrorCode | null)> = {
    idempotency_key: 'invalid_idempotency_key',
    // Service mode needs a name: missing, null or blank all read as "no name given".
    customer_name: (dto) =>
      dto.payment_mode === 'service' && (typeof dto.customer_name !== 'string' || dto.customer_name.trim() === '')
        ? 'customer_name_required'
        : null,
  };

  @IsUUID('all', { message: 'account_id must be a UUID' }) account_id: string;
  @IsInt({ message: 'fiat_amount_int must be an integer' }) @Min(1) @Max(2147483647) fiat_amount_int: number;
  @CurrencyAssertion() fiat_currency_code?: string;
  @IsOptional() @IsString() @MaxLength(500) memo?: string;
  @IsOptional() @IsString({ message: 'idempotency_key must be 32 to 64 characters of A-Z a-z 0-9 _ -' })
  @Matches(IDEMPOTENCY_KEY, { message: 'idempotency_key must be 32 to 64 characters of A-Z a-z 0-9 _ -' })
  idempotency_key?: string;
  @IsOptional() @IsObject() @Validate(MetadataRule) metadata?: Record<string, string>;
  @IsOptional() @IsIn(['pos', 'service']) payment_mode?: PaymentMode;
  @ValidateIf((o: CreateRequestDto) => o.payment_mode === 'service' || o.customer_name !== undefined)
  @IsString({ message: 'customer_name is required in service mode' }) @MaxLength(200)
  @Matches(/\S/, { message: 'customer_name must not be blank' })
  customer_name?: string;
  @IsOptional() @IsString() @MaxLength(254) customer_email?: string;
  @IsOptional() @IsString() @MaxLength(50) customer_phone?: string;
  @IsOptional() @IsInt() @Min(1) @Max(5256000) expiry_minutes?: number;
}

export class ListRequestsQuery {
  @IsOptional() @IsIn(REQUEST_STATUSES as RequestStatus[]) status?: RequestStatus;
  @IsOptional() @IsIn(PROOF_STATUSES as ProofStatus[]) proof_status?: ProofStatus;
  @IsOptional() @IsUUID('all', { message: 'account_id must be a UUID' }) account_id?: string;
  @IsOptional() @IsTimestamp() since?: string;
  @IsOptional() @IsTimestamp() until?: string;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}

/**
 * The partner API's create, as the one create path takes it: source `partner`, metadata `{}` when none is sent.
 * A field sent as null arrives here unset (nullIsAbsent): the use case tells "given" by `!== undefined`.
 */
export function createInput(dto: CreateRequestDto): CreateRequestInput {
  return {
    merchantId: dto.account_id,
    fiatAmount: dto.fiat_amount_int,
    fiatCurrencyCode: dto.fiat_currency_code,
    memo: dto.memo,
    idempotencyKey: dto.idempotency_key,
    metadata: dto.metadata ?? {},
    paymentMode: dto.payment_mode ?? 'pos',
    customerName: dto.customer_name,
    customerEmail: dto.customer_email,
    customerPhone: dto.customer_phone,
    expiryMinutes: dto.expiry_minutes,
    source: 'partner',
  };
}

/** Spec §4.3's query as the list use case takes it. */
export function listQuery(q: ListRequestsQuery & { source?: RequestSource; plan_id?: string }): RequestListQuery {
  return {
    status: q.status,
    proofStatus: q.proof_status,
    merchantId: q.account_id,
    source: q.source,
    planId: q.plan_id,
    since: q.since,
    until: q.until,
    limit: q.limit,
    offset: q.offset,
  };
}

/**
 * `POST /pay/api/:id/proof` (DESIGN §4, §8): a missing or malformed `tx_hash` is 400 `invalid_tx_hash`; any other
 * field is an unknown field, 400 `invalid_request`, and changes nothing (it used to attach the proof).
 */
export class SubmitProofDto {
  static fieldCodes: Record<string, ErrorCode> = { tx_hash: 'invalid_tx_hash' };
  @IsString({ message: 'tx_hash must be 0x plus 64 hex characters' }) @Matches(/^0x[0-9a-fA-F]{64}$/, { message: 'tx_hash must be 0x plus 64 hex characters' })
  tx_hash: string;
}
