import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUUID, Max, Min } from 'class-validator';
import { strictInt } from '../../common/http/query';
import { PAGE_MAX } from '../../common/paging';
import { DELIVERY_STATES, type DeliveryState } from './webhook-event.entity';

export class PutWebhookDto {
  // Length, scheme and address are the SSRF guard's to judge, so its reason reaches the caller.
  @IsString() url: string;
  @IsBoolean() enabled: boolean;
}

export class ListDeliveriesQuery {
  @IsOptional() @IsUUID('all', { message: 'partner_id must be a UUID' }) partner_id?: string;
  @IsOptional() @IsUUID('all', { message: 'request_id must be a UUID' }) request_id?: string;
  @IsOptional() @IsIn(DELIVERY_STATES as unknown as string[]) status?: DeliveryState;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(1) @Max(PAGE_MAX) limit?: number;
  @IsOptional() @Transform(strictInt) @IsInt() @Min(0) @Max(2147483647) offset?: number;
}
