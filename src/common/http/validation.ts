import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, type ValidationError } from 'class-validator';
import { AppError, type ErrorCode, type FieldError } from '../errors';
import { FORBIDDEN_KEYS } from '../forbidden-keys';
import { hasForbiddenKey, MAX_BODY_DEPTH, nestedDeeperThan, textErrors } from './body';

const FORBIDDEN_KEY_LIST = [...FORBIDDEN_KEYS].join(', ').replace(/, ([^,]+)$/, ' and $1');

/** The fields a DTO declares (any validation decorator), per class. */
const declared = new WeakMap<Function, Set<string>>();
function declaredFields(type: Function): Set<string> {
  let fields = declared.get(type);
  if (!fields) {
    fields = new Set(getMetadataStorage().getTargetValidationMetadatas(type, '', true, false).map((m) => m.propertyName));
    declared.set(type, fields);
  }
  return fields;
}

/**
 * Unknown fields that class-transformer leaves off the instance, so that class-validator's whitelist never sees
 * them: names the instance already has a function under (toString, valueOf, hasOwnProperty and the rest of
 * Object.prototype). `{"toString": "x"}` was accepted and ignored, where every other unknown field is refused.
 */
function skippedFields(type: Function, value: Record<string, unknown>, instance: object): FieldError[] {
  const fields = declaredFields(type);
  return Object.keys(value)
    .filter((k) => !fields.has(k) && !Object.hasOwn(instance, k))
    .map((k) => ({ field: k, message: `property ${k} should not exist` }));
}

/**
 * class-transformer copies a field's plain object (metadata) key by key and leaves off the keys the copy already
 * has a function under (toString, valueOf, hasOwnProperty, …): `"metadata": {"toString": "x"}` was stored as `{}`
 * and answered 201 (spec §2.1: metadata round-trips unchanged), and a number under such a key went unchecked.
 * A field whose copy is a plain object (no nested DTO class) takes the object as parsed, so it is validated and
 * kept whole; hasForbiddenKey has already refused `__proto__` and the like at any depth.
 */
function keepPlainObjects(type: Function, value: Record<string, unknown>, instance: object): void {
  const copy = instance as Record<string, unknown>;
  for (const k of declaredFields(type)) {
    const sent = value[k];
    const made = copy[k];
    const plain = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
    if (plain(sent) && plain(made) && Object.getPrototypeOf(made) === Object.prototype) copy[k] = sent;
  }
}

/** Field errors, flattened to dotted paths. */
export function flatten(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    // One message once: two rules of a field may share it ("tx_hash must be 0x plus 64 hex characters" for
    // both IsString and Matches on a number).
    for (const message of new Set(Object.values(e.constraints ?? {}))) out.push({ field, message });
    if (e.children?.length) out.push(...flatten(e.children, field));
  }
  return out;
}

/**
 * What a DTO class can say of itself: a specific error code for a failing field (e.g. invalid_idempotency_key),
 * and `nullIsAbsent`: a top-level field of the DTO sent as null is one not sent (creates, where many JSON clients
 * send unset optional fields as null; a required one is then reported missing). A PATCH whose null clears a field
 * leaves it unset.
 */
export interface FieldCodes {
  fieldCodes?: Record<string, ErrorCode | ((dto: any) => ErrorCode | null)>;
  nullIsAbsent?: boolean;
}

/**
 * The body or the query of a route that takes no fields (a cancel, a list without filters): `@Body() _body:
 * NoFields`. Any field sent is an unknown one, 400 like on every other route (DESIGN §3): a cancel sent with
 * `{"reason": …}` cancelled and ignored it.
 */
export class NoFields {}

/**
 * Validates bodies and queries into DTO instances: unknown fields rejected, no type coercion of bodies,
 * one invalid_request listing every bad field — or the spec's own code when that field is the one at fault.
 */
@Injectable()
export class DtoPipe implements PipeTransform {
  transform(value: unknown, meta: ArgumentMetadata): unknown {
    const type = meta.metatype as (new () => object) & FieldCodes | undefined;
    if ((meta.type !== 'body' && meta.type !== 'query') || !type || type === Object || type === String) return value;
    // No body at all reads as {}; a JSON null is a body of the wrong type (below), as an array or a string is.
    if (meta.type === 'body' && value === undefined) value = {};
    // What a whole-input error names: the body or the query string (a query's `__proto__` read "(body)").
    const whole = meta.type === 'body' ? '(body)' : '(query)';
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw AppError.invalid([{ field: whole, message: 'must be a JSON object' }]);
    }
    if (type === NoFields) {
      const sent = Object.keys(value);
      if (sent.length > 0) throw AppError.invalid(sent.map((field) => ({ field, message: `property ${field} should not exist` })));
      return value;
    }
    // class-transformer recurses without a bound: a deeply nested body would overflow the stack (a 500).
    if (nestedDeeperThan(value, MAX_BODY_DEPTH)) {
      throw AppError.invalid([{ field: whole, message: `must not nest more than ${MAX_BODY_DEPTH} levels deep` }]);
    }
    if (hasForbiddenKey(value)) {
      throw AppError.invalid([{ field: whole, message: `${FORBIDDEN_KEY_LIST} are not allowed as keys` }]);
    }
    // Only the DTO's own fields: an unknown one sent as null is still an unknown field (DESIGN §8: metadata in a
    // dashboard or handle create).
    if (type.nullIsAbsent && meta.type === 'body') {
      const fields = declaredFields(type);
      value = Object.fromEntries(Object.entries(value).filter(([k, v]) => v !== null || !fields.has(k)));
    }
    const instance = plainToInstance(type, value, { enableImplicitConversion: false, exposeDefaultValues: false });
    keepPlainObjects(type, value as Record<string, unknown>, instance);
    const unstorable = textErrors(value);
    let checked: FieldError[];
    try {
      checked = flatten(validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true }));
    } catch (e) {
      // A validator that throws on text Postgres cannot store either (isEmail on a lone surrogate once did:
      // a 500): that text's own error says what is wrong.
      if (unstorable.length === 0) throw e;
      checked = [];
    }
    const errors = [...checked, ...skippedFields(type, value as Record<string, unknown>, instance), ...unstorable];
    if (errors.length === 0) return instance;
    for (const [field, rule] of Object.entries(type.fieldCodes ?? {})) {
      if (!errors.some((e) => e.field === field)) continue;
      const code = typeof rule === 'function' ? rule(instance) : rule;
      if (code) throw new AppError(code, { errors });
    }
    throw AppError.invalid(errors);
  }
}
