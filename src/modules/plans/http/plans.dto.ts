import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, Validate } from 'class-validator';
import { OneEmailAddress } from '../../../common/email-address';
import { CurrencyAssertion } from '../../../common/http/currency-assertion';
import { strictInt } from '../../../common/http/query';
import { MaxChars } from '../../../common/http/max-chars';
import { IsTimestamp } from '../../../common/http/timestamp';
import { PAGE_MAX } from '../../../common/paging';
import { MetadataRule } from '../../requests/http/request.dto';
import { PLAN_STATUSES, type PlanStatus } from '../domain/plan';
import { PLAN_INTERVALS, type PlanInterval } from '../domain/schedule';

/** DESIGN §5 `POST /dashboard/api/plans`. */
export class CreatePlanDto {
  static nullIsAbsent = true;
  @IsString({ message: 'title must be a string' }) @MaxChars(120) @Matches(/\S/, { message: 'title must not be blank' }) title: string;
  @IsInt({ message: 'fiat_amount_int must be an integer' }) @Min(1) @Max(2147483647) fiat_amount_int: number;
  @IsIn(PLAN_INTERVALS as PlanInterval[], { message: 'interval must be one of day, week, month, year' }) interval: PlanInterval;
  @IsOptional() @IsInt({ message: 'interval_count must be an integer' }) @Min(1) @Max(12) interval_count?: number;
  @IsOptional() @IsTimestamp({ message: 'start_at must be an ISO 8601 date, or date and time; no zone is UTC' }) start_at?: string;
  @IsOptional() @IsInt({ message: 'max_charges must be an integer' }) @Min(1) @Max(2147483647) max_charges?: number;
  @IsOptional() @IsInt({ message: 'expiry_minutes must be an integer' }) @Min(1) @Max(5256000) expiry_minutes?: number;
  @IsOptional() @IsString() @MaxLength(200) @Matches(/\S/, { message: 'payer_name must not be blank' }) payer_name?: string;
  @OneEmailAddress('payer_email') payer_email?: string;
  @IsOptional() @IsObject() @Validate(MetadataRule) metadata?: Record<string, string>;
  @CurrencyAssertion() fiat_currency_code?: string;
}

export class ListPlansQuery {
  @IsOptional() @IsIn(PLAN_STATUSES as PlanStatus[]) status?: PlanStatus;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
