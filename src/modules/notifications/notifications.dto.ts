import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { strictInt } from '../../common/http/query';
import { PAGE_MAX } from '../../common/paging';
import { NOTIFICATION_STATUSES, type NotificationStatus } from './notification';

export class ListNotificationsQuery {
  @IsOptional() @IsIn(NOTIFICATION_STATUSES as unknown as string[]) status?: NotificationStatus;
  @IsOptional() @IsUUID('all', { message: 'request_id must be a UUID' }) request_id?: string;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
