import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { ADDRESS_PATTERN } from '../../common/address';
import { OneEmailAddress } from '../../common/email-address';
import { strictBool, strictInt } from '../../common/http/query';
import { PAGE_MAX } from '../../common/paging';

/** Anything but the zero address (isZeroAddress). */
const NOT_ZERO_ADDRESS = /^(?!0x0{40}$)/i;

/** Lower-cases the hex digits of an address; the 0x prefix itself must be sent lower case (spec §4.5). */
const lowerHex = ({ value }: { value: unknown }) =>
  typeof value === 'string' && value.startsWith('0x') ? `0x${value.slice(2).toLowerCase()}` : value;

export class CreateMerchantDto {
  /** One plain address (spec §4.5 "basic email format"): the merchant's notes are mailed to it. */
  @OneEmailAddress('email')
  email?: string;
  @IsOptional() @IsString() @MaxLength(120) display_name?: string;
  @IsOptional() @IsString() @MaxLength(120) business_name?: string;
  @IsOptional() @IsString() @Matches(/^[A-Z]{2}$/, { message: 'country must be ISO 3166-1 alpha-2, two upper-case letters' })
  country?: string;
  @IsOptional() @IsString() @MaxLength(32) phone?: string;
  @IsOptional() @IsString() @MaxLength(200) website?: string;
  @IsOptional() @IsString() @MaxLength(200) instagram?: string;
  @IsOptional() @IsString() @MaxLength(80) industry?: string;
  @IsOptional() @IsString() @Matches(/^[A-Za-z]{3}$/, { message: 'display_currency must be an ISO 4217 code' })
  display_currency?: string;
  @IsOptional() @IsIn(['consumer', 'business']) account_type?: 'consumer' | 'business';
  @IsOptional() @IsString() @Matches(ADDRESS_PATTERN, { message: 'wallet_address must be 0x plus 40 hex characters' })
  @Matches(NOT_ZERO_ADDRESS, { message: 'wallet_address must not be the zero address (nobody holds its key)' })
  @Transform(lowerHex)
  wallet_address?: string;
}


export class ListMerchantsQuery {
  @IsOptional() @IsIn(['complete', 'incomplete']) onboarding_status?: 'complete' | 'incomplete';
  @IsOptional() @Transform(strictBool) @IsBoolean({ message: 'disabled must be true or false' }) disabled?: boolean;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
