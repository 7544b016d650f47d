import { Injectable, type PipeTransform } from '@nestjs/common';
import { AppError } from '../errors';
import { isUuid } from '../ids';

/**
 * Route ids that cannot be a uuid: the same not_found as an unknown id, so a caller cannot tell the two apart
 * (spec), and Postgres never sees a malformed uuid (which would be a 500).
 */
@Injectable()
export class UuidParamPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isUuid(value)) throw AppError.notFound();
    return value;
  }
}
