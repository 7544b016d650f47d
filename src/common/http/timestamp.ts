import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { isISO8601, ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * A calendar date, or a date and time (minutes at least, an optional fraction after a dot, an optional
 * zone): the ISO 8601 forms that JavaScript's Date and Postgres' timestamptz both read. isISO8601 alone also
 * takes a bare year, a month, a week or ordinal date, an hour without minutes and a comma fraction, which one
 * or the other refuses (Postgres then failed the query: a 500). A zone's offset is at most ±15:59: Date reads
 * up to ±23:59, Postgres refuses past 15:59 (every zone in use lies within −12:00 and +14:00).
 */
export const MOMENT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?([Zz]|[+-](?:0\d|1[0-5]):?[0-5]\d)?)?$/;

export function isTimestamp(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    MOMENT.test(value) &&
    isISO8601(value, { strict: true, strictSeparator: true }) &&
    !Number.isNaN(Date.parse(value))
  );
}

/**
 * The moment a timestamp names, with its zone written out: one without a zone is UTC, as every timestamp
 * this API writes is (a date alone is its midnight). Without this, Postgres would read a zone-less value in
 * its session's TimeZone and JavaScript in the process's, so one query could mean three different moments.
 */
export function inUtc(value: string): string {
  const m = MOMENT.exec(value);
  if (!m) return value;
  if (m[1] !== undefined) return value;
  return value.includes('T') ? `${value}Z` : `${value}T00:00:00Z`;
}

/** A query or body timestamp (list since/until, a plan's start_at): see isTimestamp; read as inUtc. */
export function IsTimestamp(options?: ValidationOptions): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' && isTimestamp(value) ? inUtc(value) : value)),
    ValidateBy(
      {
        name: 'isTimestamp',
        validator: {
          validate: isTimestamp,
          defaultMessage: (args) =>
            `${args?.property} must be an ISO 8601 date, or date and time (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM|±HHMM], the offset at most 15:59; no zone is UTC)`,
        },
      },
      options,
    ),
  );
}
