import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { SCOPES, type Scope } from '../auth/scopes';

export class CreatePartnerDto {
  @IsString() @Matches(/^[a-z0-9][a-z0-9-]{1,62}$/, { message: 'slug must be 2-63 lower-case letters, digits or dashes' }) slug: string;
  @IsString() @MaxLength(200) @Matches(/\S/, { message: 'name must not be blank' }) name: string;
  @IsString() @Matches(/^[A-Za-z]{3}$/, { message: 'default_currency must be an ISO 4217 code' }) default_currency: string;
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(50) @ArrayUnique() @IsInt({ each: true }) @Min(1, { each: true })
  @Max(5256000, { each: true })
  allowed_expiry_minutes?: number[];
  @IsOptional() @IsInt() @Min(1) @Max(5256000) default_expiry_minutes?: number;
}

/**
 * A partner's settings can be changed, not cleared: a field sent as null is refused (400), like a wrong type,
 * rather than read as not sent (@IsOptional would skip it, and answer 200 changing nothing).
 */
const Sent = () => ValidateIf((_, v) => v !== undefined);

export class UpdatePartnerDto {
  @Sent() @IsString() @MaxLength(200) @Matches(/\S/, { message: 'name must not be blank' }) name?: string;
  @Sent() @IsString() @Matches(/^[A-Za-z]{3}$/, { message: 'default_currency must be an ISO 4217 code' }) default_currency?: string;
  @Sent() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(50) @ArrayUnique() @IsInt({ each: true }) @Min(1, { each: true })
  @Max(5256000, { each: true })
  allowed_expiry_minutes?: number[];
  @Sent() @IsInt() @Min(1) @Max(5256000) default_expiry_minutes?: number;
}

export class CreateKeyDto {
  @IsIn(['test', 'live']) mode: 'test' | 'live';
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayUnique() @IsIn(SCOPES as unknown as string[], { each: true }) scopes?: Scope[];
  @IsOptional() @IsString() @MaxLength(100) label?: string;
}
