import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * At most `max` characters as Postgres counts them (char_length: code points), for a column whose check
 * counts so. class-validator's MaxLength counts as validator.js does, which leaves the variation selectors
 * U+FE0E and U+FE0F out: a plan title of 61 × "a\uFE0F" passed @MaxLength(120) and failed plans_title_check
 * (a 500). The message is MaxLength's.
 */
export function MaxChars(max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxChars',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || [...value].length <= max,
        defaultMessage: (args) => `${args?.property} must be shorter than or equal to ${max} characters`,
      },
    },
    options,
  );
}
