import { createHmac } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import {
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookEvent,
  type WebhookVerificationErrorCode,
} from './index';

const SECRET = 'a3f1c2d4e5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';
const OLD_SECRET = '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0';
const NOW = 1_760_000_000;

const event: WebhookEvent = {
  event: 'payment.proof_verified',
  delivery_id: '7d6f1f0e-3a47-4b8e-9a51-6f1d2c3b4a59',
  partner_id: '0b8e4a1c-5d2f-4e6a-8b9c-1d2e3f4a5b6c',
  request_id: '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d',
  account_id: '9c8b7a6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d',
  proof_status: 'verified',
  proof_source: 'payer_submitted',
  tx_hash: '0x' + 'ab'.repeat(32),
  payer_address: '0x' + '12'.repeat(20),
  metadata: { order_id: 'A-1001', note: 'café ☕' },
  timestamp: '2025-10-09T08:53:20.123Z',
  test_mode: true,
};
// Deliberately not JSON.stringify's exact output: whitespace and key order must survive as sent.
const RAW = JSON.stringify(event, null, 1);

function errorOf(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(WebhookVerificationError);
    return e as WebhookVerificationError;
  }
  throw new Error('expected a WebhookVerificationError');
}

function expectCode(fn: () => unknown, code: WebhookVerificationErrorCode): void {
  expect(errorOf(fn).code).toBe(code);
}

describe('signWebhook', () => {
  it('is HMAC-SHA256 keyed by the secret text over `${t}.${rawBody}`, hex, then t', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.${RAW}`).digest('hex');
    expect(signWebhook(RAW, [SECRET], NOW)).toBe(`v1=${expected},t=${NOW}`);
  });

  it('emits one v1 per secret in the given order', () => {
    const header = signWebhook(RAW, [SECRET, OLD_SECRET], NOW);
    const [a, b, t] = header.split(',');
    expect(a).toBe(signWebhook(RAW, [SECRET], NOW).split(',')[0]);
    expect(b).toBe(signWebhook(RAW, [OLD_SECRET], NOW).split(',')[0]);
    expect(t).toBe(`t=${NOW}`);
  });

  it('signs a Buffer exactly like the same bytes as a string', () => {
    expect(signWebhook(Buffer.from(RAW, 'utf8'), [SECRET], NOW)).toBe(signWebhook(RAW, [SECRET], NOW));
  });
});

describe('verifyWebhook', () => {
  const header = signWebhook(RAW, [SECRET], NOW);

  it('accepts a valid delivery and returns the parsed payload', () => {
    const got = verifyWebhook(RAW, header, SECRET, { now: NOW });
    expect(got).toEqual(event);
    expect(got.event === 'payment.proof_verified' && got.test_mode).toBe(true);
  });

  it('accepts the raw body as a Buffer (express.raw)', () => {
    expect(verifyWebhook(Buffer.from(RAW), header, [SECRET], { now: NOW }).delivery_id).toBe(event.delivery_id);
  });

  // Fetch-style frameworks (Next.js route handlers, Hono, workers) hand over an ArrayBuffer or a Uint8Array:
  // they were refused as invalid_body, which a receiver answers 400, abandoning the delivery.
  it('accepts the raw body as an ArrayBuffer or a Uint8Array, a view into a larger buffer included', () => {
    const bytes = new TextEncoder().encode(RAW);
    expect(verifyWebhook(bytes, header, SECRET, { now: NOW })).toEqual(event);
    expect(verifyWebhook(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, header, SECRET, { now: NOW })).toEqual(event);
    const padded = new Uint8Array(bytes.length + 8);
    padded.set(bytes, 4);
    expect(verifyWebhook(padded.subarray(4, 4 + bytes.length), header, SECRET, { now: NOW })).toEqual(event);
    expectCode(() => verifyWebhook(padded.subarray(3, 3 + bytes.length), header, SECRET, { now: NOW }), 'signature_mismatch');
  });

  // instanceof ArrayBuffer is false for one made in another realm (a vm context; some test environments), and a
  // DataView is a view too: both were refused as invalid_body.
  it('accepts an ArrayBuffer from another realm and a DataView', () => {
    const bytes = new TextEncoder().encode(RAW);
    const foreign = runInNewContext('new ArrayBuffer(n)', { n: bytes.length }) as ArrayBuffer;
    expect(foreign instanceof ArrayBuffer).toBe(false);
    new Uint8Array(foreign).set(bytes);
    expect(verifyWebhook(foreign, header, SECRET, { now: NOW })).toEqual(event);
    expect(verifyWebhook(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), header, SECRET, { now: NOW })).toEqual(event);
  });

  it("returns the portal's test ping as a WebhookPing (no request)", () => {
    const ping = JSON.stringify({ event: 'ping', delivery_id: event.delivery_id, partner_id: event.partner_id, timestamp: event.timestamp });
    const got = verifyWebhook(ping, signWebhook(ping, [SECRET], NOW), SECRET, { now: NOW });
    expect(got.event).toBe('ping');
    expect(got).not.toHaveProperty('request_id');
  });

  it('rejects the wrong secret', () => {
    expectCode(() => verifyWebhook(RAW, header, OLD_SECRET, { now: NOW }), 'signature_mismatch');
  });

  it('rejects a tampered body', () => {
    const tampered = RAW.replace('"test_mode": true', '"test_mode": false');
    expect(tampered).not.toBe(RAW);
    expectCode(() => verifyWebhook(tampered, header, SECRET, { now: NOW }), 'signature_mismatch');
  });

  it('rejects a re-serialised body (parse then stringify is not the raw body)', () => {
    const reserialised = JSON.stringify(JSON.parse(RAW));
    expectCode(() => verifyWebhook(reserialised, header, SECRET, { now: NOW }), 'signature_mismatch');
  });

  it('rejects a signature whose t was changed', () => {
    const moved = header.replace(`t=${NOW}`, `t=${NOW + 1}`);
    expectCode(() => verifyWebhook(RAW, moved, SECRET, { now: NOW }), 'signature_mismatch');
  });

  it('rejects a v1 that differs in one hex digit', () => {
    const sig = header.slice(3, 67);
    const flipped = (sig[0] === '0' ? '1' : '0') + sig.slice(1);
    expectCode(() => verifyWebhook(RAW, `v1=${flipped},t=${NOW}`, SECRET, { now: NOW }), 'signature_mismatch');
  });

  describe('secret rotation', () => {
    const rotating = signWebhook(RAW, [SECRET, OLD_SECRET], NOW);

    it('verifies with the new secret only', () => {
      expect(verifyWebhook(RAW, rotating, SECRET, { now: NOW }).event).toBe('payment.proof_verified');
    });

    it('verifies with the old secret only', () => {
      expect(verifyWebhook(RAW, rotating, OLD_SECRET, { now: NOW }).event).toBe('payment.proof_verified');
    });

    it('verifies when the receiver holds both secrets, in either order', () => {
      expect(() => verifyWebhook(RAW, rotating, [OLD_SECRET, SECRET], { now: NOW })).not.toThrow();
      expect(() => verifyWebhook(RAW, header, [OLD_SECRET, SECRET], { now: NOW })).not.toThrow();
      const oldOnly = signWebhook(RAW, [OLD_SECRET], NOW);
      expect(() => verifyWebhook(RAW, oldOnly, [SECRET, OLD_SECRET], { now: NOW })).not.toThrow();
    });

    it('still rejects when neither secret matches', () => {
      const other = 'f'.repeat(64);
      expectCode(() => verifyWebhook(RAW, rotating, [other], { now: NOW }), 'signature_mismatch');
    });
  });

  describe('timestamp tolerance (300 s)', () => {
    it.each([
      ['299 s old', NOW - 299, true],
      ['300 s old', NOW - 300, true],
      ['301 s old', NOW - 301, false],
      ['299 s ahead', NOW + 299, true],
      ['301 s ahead', NOW + 301, false],
    ])('%s', (_label, t, ok) => {
      const h = signWebhook(RAW, [SECRET], t);
      if (ok) expect(verifyWebhook(RAW, h, SECRET, { now: NOW }).delivery_id).toBe(event.delivery_id);
      else expectCode(() => verifyWebhook(RAW, h, SECRET, { now: NOW }), 'timestamp_out_of_tolerance');
    });

    it('honours toleranceSeconds', () => {
      const h = signWebhook(RAW, [SECRET], NOW - 60);
      expectCode(() => verifyWebhook(RAW, h, SECRET, { now: NOW, toleranceSeconds: 30 }), 'timestamp_out_of_tolerance');
      expect(() => verifyWebhook(RAW, h, SECRET, { now: NOW, toleranceSeconds: 60 })).not.toThrow();
    });

    it('uses the system clock by default', () => {
      const h = signWebhook(RAW, [SECRET], Math.floor(Date.now() / 1000));
      expect(() => verifyWebhook(RAW, h, SECRET)).not.toThrow();
      const stale = signWebhook(RAW, [SECRET], Math.floor(Date.now() / 1000) - 3600);
      expectCode(() => verifyWebhook(RAW, stale, SECRET), 'timestamp_out_of_tolerance');
    });
  });

  describe('header parsing', () => {
    const v1 = header.slice(3, 67);

    it('accepts parts in any order and with extra whitespace', () => {
      for (const h of [
        `t=${NOW},v1=${v1}`,
        `  v1=${v1} ,  t=${NOW}  `,
        `t = ${NOW} , v1 = ${v1}`,
        `v1=${'0'.repeat(64)}, t=${NOW}, v1=${v1}`,
        `v1=${v1.toUpperCase()},t=${NOW}`,
        `v1=${v1},t=${NOW},`,
        `v0=legacy,v1=${v1},t=${NOW}`,
      ]) {
        expect(verifyWebhook(RAW, h, SECRET, { now: NOW })).toMatchObject({ request_id: event.request_id });
      }
    });

    it.each([
      ['empty', ''],
      ['only spaces', '   '],
      ['no t', `v1=${v1}`],
      ['no v1', `t=${NOW}`],
      ['two t', `v1=${v1},t=${NOW},t=${NOW}`],
      ['t not a number', `v1=${v1},t=abc`],
      ['t negative', `v1=${v1},t=-${NOW}`],
      ['t fractional', `v1=${v1},t=${NOW}.5`],
      ['t empty', `v1=${v1},t=`],
      ['v1 too short', `v1=${v1.slice(2)},t=${NOW}`],
      ['v1 not hex', `v1=${'z'.repeat(64)},t=${NOW}`],
      ['part without =', `v1=${v1},t=${NOW},garbage`],
      ['semicolon separated', `v1=${v1};t=${NOW}`],
      ['not a string', undefined as unknown as string],
    ])('%s → malformed_header', (_label, h) => {
      expectCode(() => verifyWebhook(RAW, h, SECRET, { now: NOW }), 'malformed_header');
    });
  });

  describe('body', () => {
    it('rejects a correctly signed body that is not JSON', () => {
      const body = 'not json';
      const h = signWebhook(body, [SECRET], NOW);
      expectCode(() => verifyWebhook(body, h, SECRET, { now: NOW }), 'invalid_body');
    });

    it('rejects a correctly signed JSON body that is not an object', () => {
      const body = '[1,2]';
      const h = signWebhook(body, [SECRET], NOW);
      expectCode(() => verifyWebhook(body, h, SECRET, { now: NOW }), 'invalid_body');
    });

    it('rejects a parsed object passed instead of the raw body', () => {
      expectCode(
        () => verifyWebhook(JSON.parse(RAW) as unknown as string, header, SECRET, { now: NOW }),
        'invalid_body',
      );
    });
  });

  it('throws a TypeError (a configuration error, not a bad delivery) without a secret', () => {
    expect(() => verifyWebhook(RAW, header, [], { now: NOW })).toThrow(TypeError);
    expect(() => verifyWebhook(RAW, header, '', { now: NOW })).toThrow(TypeError);
  });

  it.each([
    ['toleranceSeconds NaN (Number of an unset setting)', { toleranceSeconds: Number(undefined) }],
    ["toleranceSeconds parseInt('')", { toleranceSeconds: parseInt('', 10) }],
    ['toleranceSeconds Infinity', { toleranceSeconds: Infinity }],
    ['toleranceSeconds negative', { toleranceSeconds: -1 }],
    ['toleranceSeconds a string', { toleranceSeconds: '300' as unknown as number }],
    ['now NaN', { now: NaN }],
    ['now a Date', { now: new Date() as unknown as number }],
  ])('a %s is a TypeError, never a pass for a delivery of any age', (_label, opts) => {
    // Signed in 1970: |t − now| > NaN is false, so before the check this was accepted.
    const ancient = signWebhook(RAW, [SECRET], 1000);
    expect(() => verifyWebhook(RAW, ancient, SECRET, opts)).toThrow(TypeError);
    expect(() => verifyWebhook(RAW, header, SECRET, { now: NOW, ...opts })).toThrow(TypeError);
  });

  it('the error carries a code and a name', () => {
    const e = errorOf(() => verifyWebhook(RAW, header, OLD_SECRET, { now: NOW }));
    expect(e.name).toBe('WebhookVerificationError');
    expect(e.code).toBe('signature_mismatch');
    expect(e).toBeInstanceOf(Error);
  });
});
