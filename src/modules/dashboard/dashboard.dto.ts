import { IsEmpty, IsIn, IsInt, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { AppError, type ErrorCode } from '../../common/errors';
import { ASSET_ID_RE } from '../chain/asset-id';
import { IDEMPOTENCY_KEY } from '../requests/domain/request-rules';
import { OneEmailAddress } from '../../common/email-address';
import { CurrencyAssertion } from '../../common/http/currency-assertion';
import { ListRequestsQuery } from '../requests/http/request.dto';
import { REQUEST_SOURCES, type RequestSource } from '../requests/domain/payment-request';
import { BlankClears } from '../../common/http/blank';

export class SignInDto {
  @IsString() @MaxLength(4000) message: string;
  // Contract wallets' signatures (ERC-1271, ERC-6492) are longer than 65 bytes; a bad one is a 401, not a 400.
  @IsString() @MaxLength(20000) signature: string;
}

/** null clears a field; display_currency cannot be cleared (spec §4.5 rules otherwise). */
export class UpdateMeDto {
  @OneEmailAddress('email')
  email?: string | null;
  @BlankClears() @IsOptional() @IsString() @MaxLength(120) display_name?: string | null;
  @BlankClears() @IsOptional() @IsString() @MaxLength(120) business_name?: string | null;
  @IsOptional() @IsString() @Matches(/^[A-Z]{2}$/, { message: 'country must be ISO 3166-1 alpha-2, two upper-case letters' })
  country?: string | null;
  @IsOptional() @IsString() @MaxLength(32) phone?: string | null;
  @IsOptional() @IsString() @MaxLength(200) website?: string | null;
  @IsOptional() @IsString() @MaxLength(200) instagram?: string | null;
  @IsOptional() @IsString() @MaxLength(80) industry?: string | null;
  @ValidateIf((o: UpdateMeDto) => o.display_currency !== undefined)
  @IsString() @Matches(/^[A-Za-z]{3}$/, { message: 'display_currency must be an ISO 4217 code' })
  display_currency?: string;
}

/** Spec §4.3's query without account_id (the merchant is the signed-in one), plus source and plan_id. */
export class DashboardListQuery extends ListRequestsQuery {
  @IsEmpty({ message: 'account_id is not a filter of the dashboard' }) declare account_id?: string;
  @IsOptional() @IsIn(REQUEST_SOURCES as readonly string[] as string[]) source?: RequestSource;
  @IsOptional() @IsUUID('all', { message: 'plan_id must be a UUID' }) plan_id?: string;
}

/** GET /dashboard/api/assets: an asset to look up besides the mode's (a request's `asset_id`). */
export class AssetsQuery {
  @IsOptional() @IsString({ message: 'asset_id must be one string' }) @Matches(ASSET_ID_RE, {
    message: 'asset_id must be an asset id as requests show it (eip155:<chain id>/erc20:<token address>)',
  })
  asset_id?: string;
}

/** DESIGN §5 dashboard create: spec §4.1's rules where they fit; metadata is an unknown field here (§8). */
export class CreateDashboardRequestDto {
  static nullIsAbsent = true;
  @IsInt({ message: 'fiat_amount_int must be an integer' }) @Min(1) @Max(2147483647) fiat_amount_int: number;
  @IsOptional() @IsString() @MaxLength(500) memo?: string;
  @IsOptional() @IsString() @MaxLength(200) @Matches(/\S/, { message: 'customer_name must not be blank' }) customer_name?: string;
  @OneEmailAddress('customer_email') customer_email?: string;
  @IsOptional() @IsString() @MaxLength(50) customer_phone?: string;
  @IsOptional() @IsInt() @Min(1) @Max(5256000) expiry_minutes?: number;
  @CurrencyAssertion() fiat_currency_code?: string;
}

/** DESIGN §5 public handle create. */
export class CreateHandleRequestDto {
  static nullIsAbsent = true;
  @IsInt({ message: 'fiat_amount_int must be an integer' }) @Min(1) @Max(2147483647) fiat_amount_int: number;
  @IsOptional() @IsString() @MaxLength(500) memo?: string;
  @OneEmailAddress('customer_email') customer_email?: string;
  @CurrencyAssertion() fiat_currency_code?: string;
}

export class ClaimHandleDto {
  static fieldCodes: Record<string, ErrorCode> = { handle: 'invalid_handle' };
  @IsString({ message: 'handle must be a string' }) @MaxLength(64) handle: string;
}

/**
 * The `Idempotency-Key` header of a dashboard create (the form sends one per render), checked at the edge:
 * absent → undefined; malformed → 400 invalid_idempotency_key.
 */
export const IdempotencyKeyHeader = createParamDecorator((_: unknown, ctx: ExecutionContext): string | undefined => {
  const key = ctx.switchToHttp().getRequest<Request>().headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    throw new AppError('invalid_idempotency_key', {
      errors: [{ field: 'Idempotency-Key', message: 'must be 32 to 64 characters of A-Z a-z 0-9 _ -' }],
    });
  }
  return key;
});
