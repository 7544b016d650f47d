import { classifyOutcome, nextStep, retryDelayMs, type AttemptOutcome } from './delivery-policy';
import type { PostOutcome } from './webhook-poster';

const SPEC_DELAYS = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 86_400_000];
const schedule = { delaysMs: SPEC_DELAYS, maxAttempts: 6 };
const post = (statusCode: number | null, errorClass: PostOutcome['errorClass'] = null): PostOutcome => ({ statusCode, errorClass, durationMs: 5 });

describe('retryDelayMs', () => {
  it.each([
    [1, 60_000],
    [2, 300_000],
    [3, 1_800_000],
    [4, 7_200_000],
    [5, 21_600_000],
    [6, 86_400_000],
    [7, 86_400_000],
    [40, 86_400_000],
  ])('after attempt %d waits %d ms (spec §6.5; the last value repeats)', (n, ms) => {
    expect(retryDelayMs(n, SPEC_DELAYS)).toBe(ms);
  });

  it('a single configured delay applies to every attempt', () => {
    expect([1, 2, 9].map((n) => retryDelayMs(n, [250]))).toEqual([250, 250, 250]);
  });
});

describe('nextStep (spec §6.5)', () => {
  it.each<[string, PostOutcome, number, ReturnType<typeof nextStep>]>([
    ['200 delivers', post(200), 1, { outcome: 'delivered' }],
    ['204 delivers on the last attempt', post(204), 6, { outcome: 'delivered' }],
    ['400 abandons at once', post(400), 1, { outcome: 'abandoned' }],
    ['404 abandons at once', post(404), 2, { outcome: 'abandoned' }],
    ['410 abandons at once', post(410), 1, { outcome: 'abandoned' }],
    ['429 retries', post(429), 1, { outcome: 'retry', delayMs: 60_000 }],
    ['500 retries', post(500), 2, { outcome: 'retry', delayMs: 300_000 }],
    ['503 retries', post(503), 3, { outcome: 'retry', delayMs: 1_800_000 }],
    ['301 (not followed) retries', post(301, 'redirect'), 4, { outcome: 'retry', delayMs: 7_200_000 }],
    ['a time-out retries', post(null, 'timeout'), 5, { outcome: 'retry', delayMs: 21_600_000 }],
    ['a network error retries', post(null, 'network'), 1, { outcome: 'retry', delayMs: 60_000 }],
    ['a forbidden address at delivery time retries', post(null, 'forbidden_address'), 1, { outcome: 'retry', delayMs: 60_000 }],
    ['a retriable failure on the last attempt abandons', post(500), 6, { outcome: 'abandoned' }],
    ['a time-out on the last attempt abandons', post(null, 'timeout'), 6, { outcome: 'abandoned' }],
  ])('%s', (_, outcome, attempt, expected) => {
    expect(nextStep(outcome, attempt, schedule)).toEqual(expected);
  });

  it('WEBHOOK_MAX_ATTEMPTS=1 never retries', () => {
    expect(nextStep(post(503), 1, { delaysMs: [1000], maxAttempts: 1 })).toEqual({ outcome: 'abandoned' });
  });
});

describe('classifyOutcome', () => {
  const o = (statusCode: number | null, errorClass: PostOutcome['errorClass'] = null): PostOutcome => ({
    statusCode,
    errorClass,
    durationMs: 1,
  });
  it.each<[PostOutcome, AttemptOutcome]>([
    [o(200), 'delivered'],
    [o(204), 'delivered'],
    [o(299), 'delivered'],
    [o(400), 'abandoned'],
    [o(403), 'abandoned'],
    [o(404), 'abandoned'],
    [o(410), 'abandoned'],
    [o(499), 'abandoned'],
    [o(429), 'retry'],
    [o(500), 'retry'],
    [o(503), 'retry'],
    [o(301, 'redirect'), 'retry'],
    [o(302), 'retry'],
    [o(101), 'retry'],
    [o(null, 'timeout'), 'retry'],
    [o(null, 'network'), 'retry'],
    [o(null, 'forbidden_address'), 'retry'],
    [o(200, 'timeout'), 'retry'],
    [o(null), 'retry'],
  ])('%j → %s', (outcome, expected) => {
    expect(classifyOutcome(outcome)).toBe(expected);
  });
});
