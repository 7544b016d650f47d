import { isForbiddenKey } from '../../../common/forbidden-keys';
import {
  IDEMPOTENCY_KEY,
  internalIdempotencyKey,
  metadataErrors,
  METADATA_LIMITS,
  SERVICE_MODE_DEFAULT_EXPIRY_MINUTES,
} from './request-rules';

const b64url = 'AZaz09_-';
const repeat = (s: string, n: number) => s.repeat(Math.ceil(n / s.length)).slice(0, n);

describe('idempotency key (spec §4.1: 32 to 64 chars of base64url or hex)', () => {
  it.each([
    ['31 chars', false, repeat('a', 31)],
    ['32 chars', true, repeat('a', 32)],
    ['64 chars', true, repeat('a', 64)],
    ['65 chars', false, repeat('a', 65)],
    ['empty', false, ''],
    ['32 hex chars', true, '0123456789abcdef0123456789abcdef'],
    ['64 hex chars', true, repeat('0123456789abcdef', 64)],
    ['upper-case hex (base64url charset)', true, repeat('0123456789ABCDEF', 32)],
    ['base64url with - and _', true, repeat(b64url, 40)],
    ['a uuid (36 chars, dashes)', true, '123e4567-e89b-12d3-a456-426614174000'],
    ['contains +', false, `${repeat('a', 31)}+`],
    ['contains /', false, `${repeat('a', 31)}/`],
    ['contains = padding', false, `${repeat('a', 31)}=`],
    ['contains a space', false, `${repeat('a', 16)} ${repeat('a', 16)}`],
    ['leading space', false, ` ${repeat('a', 32)}`],
    ['trailing newline', false, `${repeat('a', 32)}\n`],
    ['contains a dot', false, `${repeat('a', 31)}.`],
    ['unicode letter', false, `${repeat('a', 31)}é`],
    ['unicode digit (Arabic-Indic)', false, `${repeat('a', 31)}٣`],
    ['emoji', false, `${repeat('a', 31)}😀`],
    ['full-width letters', false, repeat('ａ', 32)],
    ['NUL byte', false, `${repeat('a', 31)}\u0000`],
  ])('%s → valid: %s', (_label, valid, key) => {
    expect(IDEMPOTENCY_KEY.test(key)).toBe(valid);
  });

  it('the internal key for calls without a key can never collide with a partner key', () => {
    const k = internalIdempotencyKey('123e4567-e89b-12d3-a456-426614174000');
    expect(IDEMPOTENCY_KEY.test(k)).toBe(false);
    expect(internalIdempotencyKey('a')).not.toBe(internalIdempotencyKey('b'));
  });
});

function meta(n: number, value = 'v'): Record<string, string> {
  const m: Record<string, string> = {};
  for (let i = 0; i < n; i++) m[`k${i}`] = value;
  return m;
}

describe('metadata (spec §4.1: ≤ 20 keys, key ≤ 40 chars, value ≤ 500 chars, string values)', () => {
  it('states the spec limits', () => {
    expect(METADATA_LIMITS).toEqual({ maxKeys: 20, maxKeyLength: 40, maxValueLength: 500 });
  });

  it.each([
    ['empty object', {}],
    ['20 keys', meta(20)],
    ['key of 40 chars', { [repeat('k', 40)]: 'v' }],
    ['value of 500 chars', { k: repeat('v', 500) }],
    ['empty string value', { k: '' }],
    ['unicode key and value', { 'clé': 'välue 😀' }],
    // Characters as MaxLength counts memo's (code points): 500 emoji are 1,000 UTF-16 units.
    ['value of 500 emoji', { k: '😀'.repeat(500) }],
    ['key of 40 emoji', { ['😀'.repeat(40)]: 'v' }],
    ['20 keys of 40 chars with 500-char values', Object.fromEntries(Array.from({ length: 20 }, (_, i) => [repeat(`${i}k`, 40), repeat('v', 500)]))],
  ])('%s is valid', (_label, m) => {
    expect(metadataErrors(m)).toEqual([]);
  });

  it.each([
    ['21 keys', meta(21)],
    ['key of 41 chars', { [repeat('k', 41)]: 'v' }],
    ['value of 501 chars', { k: repeat('v', 501) }],
    ['value of 501 emoji', { k: '😀'.repeat(501) }],
    ['key of 41 emoji', { ['😀'.repeat(41)]: 'v' }],
    ['empty key', { '': 'v' }],
    ['number value', { k: 1 }],
    ['boolean value', { k: true }],
    ['null value', { k: null }],
    ['object value', { k: { nested: 'x' } }],
    ['array value', { k: ['x'] }],
  ])('%s is rejected', (_label, m) => {
    const errors = metadataErrors(m);
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) {
      expect(e.field).toMatch(/^metadata/);
      expect(typeof e.message).toBe('string');
    }
  });

  it('names the offending key in the field path', () => {
    expect(metadataErrors({ good: 'x', bad: 5 })).toEqual([{ field: 'metadata.bad', message: expect.any(String) }]);
  });

  it.each([
    ['an array', ['a', 'b']],
    ['an empty array', []],
    ['null', null],
    ['a string', 'x'],
    ['a number', 5],
    ['undefined', undefined],
  ])('metadata that is %s is rejected', (_label, m) => {
    expect(metadataErrors(m)).toEqual([{ field: 'metadata', message: expect.any(String) }]);
  });

  it('rejects __proto__ given as an own key (as JSON.parse makes it)', () => {
    const m = JSON.parse('{"__proto__": "x"}');
    expect(Object.keys(m)).toEqual(['__proto__']);
    expect(metadataErrors(m).length).toBeGreaterThan(0);
    const nested = JSON.parse('{"__proto__": {"polluted": "yes"}}');
    expect(metadataErrors(nested).length).toBeGreaterThan(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['constructor', 'prototype'])('rejects %s as a key', (key) => {
    expect(isForbiddenKey(key)).toBe(true);
    expect(metadataErrors({ [key]: 'x' }).length).toBeGreaterThan(0);
  });

  it('does not treat keys that merely contain those words as forbidden', () => {
    expect(isForbiddenKey('constructor_id')).toBe(false);
    expect(metadataErrors({ constructor_id: 'x', proto: 'y', __proto: 'z' })).toEqual([]);
  });
});

describe('service mode', () => {
  it('defaults to 7 days of expiry (spec §4.1)', () => {
    expect(SERVICE_MODE_DEFAULT_EXPIRY_MINUTES).toBe(10080);
  });
});
