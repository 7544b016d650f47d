import type { FieldError } from '../../../common/errors';
import { isForbiddenKey } from '../../../common/forbidden-keys';

/** 32 to 64 characters of the base64url alphabet (which contains hex) — spec §4.1. */
export const IDEMPOTENCY_KEY = /^[A-Za-z0-9_-]{32,64}$/;

/**
 * The key used when the partner sends none: random, and starting with a character outside the partner
 * alphabet so it can never equal a partner's key (spec §4.1 rule 4: no replay protection).
 */
export function internalIdempotencyKey(random: string): string {
  return `~${random}`;
}

export const METADATA_LIMITS = { maxKeys: 20, maxKeyLength: 40, maxValueLength: 500 } as const;

/**
 * Longer than `max` characters, counted in code points as class-validator's MaxLength counts the other fields
 * (an emoji is one character, not its two UTF-16 units; MaxLength also leaves out the variation selectors
 * U+FE0E and U+FE0F, which count here).
 */
function longerThan(s: string, max: number): boolean {
  return s.length > max && [...s].length > max;
}

/** Validates metadata: an object of at most 20 string values, keys ≤ 40 chars, values ≤ 500 chars. */
export function metadataErrors(value: unknown, field = 'metadata'): FieldError[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return [{ field, message: 'must be an object of string values' }];
  }
  const errors: FieldError[] = [];
  const keys = Object.keys(value);
  if (keys.length > METADATA_LIMITS.maxKeys) {
    errors.push({ field, message: `must have at most ${METADATA_LIMITS.maxKeys} keys` });
  }
  for (const key of keys) {
    const v = (value as Record<string, unknown>)[key];
    if (key.length === 0 || longerThan(key, METADATA_LIMITS.maxKeyLength)) {
      errors.push({ field: `${field}.${key}`, message: `key must be 1 to ${METADATA_LIMITS.maxKeyLength} characters` });
    } else if (isForbiddenKey(key)) {
      errors.push({ field: `${field}.${key}`, message: 'key is not allowed' });
    }
    if (typeof v !== 'string') {
      errors.push({ field: `${field}.${key}`, message: 'value must be a string' });
    } else if (longerThan(v, METADATA_LIMITS.maxValueLength)) {
      errors.push({ field: `${field}.${key}`, message: `value must be at most ${METADATA_LIMITS.maxValueLength} characters` });
    }
  }
  return errors;
}

/** Default expiry: the partner's in pos mode, 7 days in service mode (spec §4.1). */
export const SERVICE_MODE_DEFAULT_EXPIRY_MINUTES = 10080;

export type PaymentMode = 'pos' | 'service';
