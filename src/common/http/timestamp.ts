import { isISO8601, ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * A calendar date, or a date and time (minutes at least, an optional fraction after a dot, an optional
 * zone): the ISO 8601 forms that JavaScript's Date and Postgres' timestamptz both read, and read alike.
 * isISO8601 alone also takes a bare year, a month, a week or ordinal date, an hour without minutes and a
 * comma fraction, which one or the other refuses (Postgres then failed the query: a 500).
 */
const MOMENT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

export function isTimestamp(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    MOMENT.test(value) &&
    isISO8601(value, { strict: true, strictSeparator: true }) &&
    !Number.isNaN(Date.parse(value))
  );
}

/** A query or body timestamp (list since/until, a plan's start_at): see isTimestamp. */
export function IsTimestamp(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTimestamp',
      validator: {
        validate: isTimestamp,
        defaultMessage: (args) => `${args?.property} must be an ISO 8601 date, or date and time (YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM])`,
      },
    },
    options,
  );
}
