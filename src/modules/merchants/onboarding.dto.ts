import { IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

export class WalletProofDto {
  @IsString() @MaxLength(4000) message: string;
  /**
   * 65 bytes from a plain account; a contract wallet's is longer (a Safe's carries one per owner, an ERC-6492
   * one wraps its wallet's deployment), hence the range. The bound keeps the on-chain check cheap.
   */
  @IsString()
  @MaxLength(16386)
  @Matches(/^0x(?:[0-9a-fA-F]{2}){65,}$/, { message: 'signature must be hex bytes: 65 from a plain account, more from a contract wallet' })
  signature: string;
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
