import { applyDecorators } from '@nestjs/common';
import { isEmail, IsOptional, IsString, MaxLength, ValidateBy } from 'class-validator';

/**
 * One plain email address (local@domain): what validator's isEmail takes, minus quoted local parts, display
 * names, whitespace and list separators. nodemailer reads a recipient as an address list, so "a@x, b@y" is two
 * recipients and "a@x\r\nBcc: c@z" is c@z; a message is only ever sent to a string that names one address.
 */
export function isOneEmailAddress(s: string): boolean {
  if (/[\s",;<>()[\]\\]/.test(s)) return false;
  try {
    return isEmail(s);
  } catch {
    return false; // validator throws URIError on some malformed text (a lone surrogate)
  }
}

/** An optional email field of a merchant-side or public form: at most 254 characters, one plain address. */
export const OneEmailAddress = (field: string) =>
  applyDecorators(
    IsOptional(),
    IsString(),
    MaxLength(254),
    ValidateBy({ name: 'isOneEmailAddress', validator: { validate: (v) => typeof v === 'string' && isOneEmailAddress(v) } }, {
      message: `${field} must be one email address`,
    }),
  );
