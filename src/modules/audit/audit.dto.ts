import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { strictInt } from '../../common/http/query';
import { IsTimestamp } from '../../common/http/timestamp';
import { PAGE_MAX } from '../../common/paging';
import { AUDIT_ACTIONS, type AuditAction } from './audit';

export class ListAuditQuery {
  @IsOptional() @IsUUID('all', { message: 'partner_id must be a UUID' }) partner_id?: string;
  @IsOptional() @IsIn(AUDIT_ACTIONS as unknown as string[]) action?: AuditAction;
  @IsOptional() @IsTimestamp() since?: string;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
