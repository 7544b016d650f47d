import { IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

export class WalletProofDto {
  @IsString() @MaxLength(4000) message: string;
  @IsString() @Matches(/^0x[0-9a-fA-F]{130}$/, { message: 'signature must be a 65-byte hex signature' }) signature: string;
}

export class CompleteOnboardingDto {
  @IsBoolean() accept_terms: boolean;
  @IsOptional() @IsString() @MaxLength(120) display_name?: string;
  @IsOptional() @IsString() @MaxLength(120) business_name?: string;
  @IsOptional() @IsString() @Matches(/^[A-Z]{2}$/, { message: 'country must be ISO 3166-1 alpha-2, two upper-case letters' })
  country?: string;
  @IsOptional() @IsString() @Matches(/^[A-Za-z]{3}$/, { message: 'display_currency must be an ISO 4217 code' })
  display_currency?: string;
}
