import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { strictBool, strictInt } from '../../common/http/query';
import { PAGE_MAX } from '../../common/paging';
import { ALERT_KINDS, type AlertKind } from './alert';

export class ListAlertsQuery {
  @IsOptional() @IsIn(ALERT_KINDS as unknown as string[]) kind?: AlertKind;
  @IsOptional() @IsUUID('all', { message: 'request_id must be a UUID' }) request_id?: string;
  /** true: the alerts still open; false: the resolved ones. */
  @IsOptional() @Transform(strictBool) @IsBoolean({ message: 'open must be true or false' }) open?: boolean;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
