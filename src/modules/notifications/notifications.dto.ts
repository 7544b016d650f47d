import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { strictInt } from '../../common/http/query';
import { PAGE_MAX } from '../../common/paging';
import { NOTIFICATION_STATUSES, type NotificationStatus } from './notification';

export class ListNotificationsQuery {
  @IsOptional() @IsIn(NOTIFICATION_STATUSES as unknown as string[]) status?: NotificationStatus;
  @IsOptional() @IsUUID('all', { message: 'request_id must be a UUID' }) request_id?: string;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}

/** POST /admin/api/notifications/:id/resend: an empty body, or allow_duplicate for a message whose last attempt was in doubt. */
export class ResendNotificationDto {
  @IsOptional() @IsBoolean() allow_duplicate?: boolean;
}
