import { dueAt, firstPeriodAfter, latestDuePeriod, type PlanInterval, type Schedule } from './schedule';

const at = (iso: string) => new Date(iso);
const plan = (startAt: string, interval: PlanInterval, intervalCount = 1): Schedule => ({ startAt: at(startAt), interval, intervalCount });
const dues = (s: Schedule, n: number) => Array.from({ length: n }, (_, k) => dueAt(s, k).toISOString());

describe('dueAt', () => {
  it.each<[string, Schedule, string[]]>([
    ['daily', plan('2026-01-30T09:15:00.000Z', 'day'), ['2026-01-30T09:15:00.000Z', '2026-01-31T09:15:00.000Z', '2026-02-01T09:15:00.000Z']],
    ['every 3 days', plan('2026-02-27T00:00:00.000Z', 'day', 3), ['2026-02-27T00:00:00.000Z', '2026-03-02T00:00:00.000Z', '2026-03-05T00:00:00.000Z']],
    ['weekly across a year end', plan('2026-12-24T12:00:00.000Z', 'week'), ['2026-12-24T12:00:00.000Z', '2026-12-31T12:00:00.000Z', '2027-01-07T12:00:00.000Z']],
    ['every 2 weeks', plan('2026-03-01T00:00:00.000Z', 'week', 2), ['2026-03-01T00:00:00.000Z', '2026-03-15T00:00:00.000Z', '2026-03-29T00:00:00.000Z']],
    // Clamped to the month's end, and computed from start_at so the 31st comes back.
    ['monthly from the 31st', plan('2027-01-31T10:00:00.000Z', 'month'),
      ['2027-01-31T10:00:00.000Z', '2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z', '2027-04-30T10:00:00.000Z', '2027-05-31T10:00:00.000Z']],
    ['monthly from the 31st in a leap year', plan('2028-01-31T00:00:00.000Z', 'month'), ['2028-01-31T00:00:00.000Z', '2028-02-29T00:00:00.000Z', '2028-03-31T00:00:00.000Z']],
    ['monthly from the 30th', plan('2027-01-30T00:00:00.000Z', 'month'), ['2027-01-30T00:00:00.000Z', '2027-02-28T00:00:00.000Z', '2027-03-30T00:00:00.000Z']],
    ['monthly from the 29th', plan('2027-01-29T00:00:00.000Z', 'month'), ['2027-01-29T00:00:00.000Z', '2027-02-28T00:00:00.000Z', '2027-03-29T00:00:00.000Z']],
    ['monthly across a year end', plan('2026-11-30T23:59:59.999Z', 'month'), ['2026-11-30T23:59:59.999Z', '2026-12-30T23:59:59.999Z', '2027-01-30T23:59:59.999Z', '2027-02-28T23:59:59.999Z']],
    ['quarterly from Nov 30', plan('2026-11-30T00:00:00.000Z', 'month', 3), ['2026-11-30T00:00:00.000Z', '2027-02-28T00:00:00.000Z', '2027-05-30T00:00:00.000Z', '2027-08-30T00:00:00.000Z']],
    ['every 12 months', plan('2026-05-15T00:00:00.000Z', 'month', 12), ['2026-05-15T00:00:00.000Z', '2027-05-15T00:00:00.000Z', '2028-05-15T00:00:00.000Z']],
    ['yearly from Feb 29', plan('2028-02-29T08:00:00.000Z', 'year'), ['2028-02-29T08:00:00.000Z', '2029-02-28T08:00:00.000Z', '2030-02-28T08:00:00.000Z', '2031-02-28T08:00:00.000Z', '2032-02-29T08:00:00.000Z']],
    ['every 2 years', plan('2026-12-31T00:00:00.000Z', 'year', 2), ['2026-12-31T00:00:00.000Z', '2028-12-31T00:00:00.000Z', '2030-12-31T00:00:00.000Z']],
    ['every 12 days', plan('2026-12-25T00:00:00.000Z', 'day', 12), ['2026-12-25T00:00:00.000Z', '2027-01-06T00:00:00.000Z', '2027-01-18T00:00:00.000Z']],
    ['every 12 weeks across a leap day', plan('2027-12-31T00:00:00.000Z', 'week', 12), ['2027-12-31T00:00:00.000Z', '2028-03-24T00:00:00.000Z', '2028-06-16T00:00:00.000Z']],
    ['monthly from the 29th in a leap year', plan('2028-01-29T00:00:00.000Z', 'month'), ['2028-01-29T00:00:00.000Z', '2028-02-29T00:00:00.000Z', '2028-03-29T00:00:00.000Z']],
    ['monthly from the 30th in a leap year', plan('2028-01-30T00:00:00.000Z', 'month'), ['2028-01-30T00:00:00.000Z', '2028-02-29T00:00:00.000Z', '2028-03-30T00:00:00.000Z']],
    ['every 4 years from Feb 29', plan('2024-02-29T00:00:00.000Z', 'year', 4), ['2024-02-29T00:00:00.000Z', '2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']],
    ['every 5 months from Aug 31 across a year end', plan('2026-08-31T00:00:00.000Z', 'month', 5), ['2026-08-31T00:00:00.000Z', '2027-01-31T00:00:00.000Z', '2027-06-30T00:00:00.000Z', '2027-11-30T00:00:00.000Z']],
    ['monthly from a very old 31st (1900 is not a leap year)', plan('1900-01-31T00:00:00.000Z', 'month'), ['1900-01-31T00:00:00.000Z', '1900-02-28T00:00:00.000Z', '1900-03-31T00:00:00.000Z']],
    ['yearly from Dec 31 23:59:59.999', plan('2026-12-31T23:59:59.999Z', 'year'), ['2026-12-31T23:59:59.999Z', '2027-12-31T23:59:59.999Z']],
  ])('%s', (_, s, expected) => {
    expect(dues(s, expected.length)).toEqual(expected);
  });

  it('handles every interval_count from 1 to 12 without drift', () => {
    for (const interval of ['day', 'week', 'month', 'year'] as const) {
      for (let n = 1; n <= 12; n++) {
        const s = plan('2027-01-31T00:00:00.000Z', interval, n);
        for (let k = 0; k < 40; k++) {
          const d = dueAt(s, k);
          expect(d.getUTCHours()).toBe(0);
          if (interval === 'month' || interval === 'year') {
            // Always the 31st, or the last day of a shorter month.
            const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
            expect(d.getUTCDate()).toBe(Math.min(31, last));
          }
          if (k > 0) expect(d.getTime()).toBeGreaterThan(dueAt(s, k - 1).getTime());
        }
      }
    }
  });

  it('reaches far periods from a very old start exactly (period 1500 of a monthly plan from 1900)', () => {
    expect(dueAt(plan('1900-01-31T00:00:00.000Z', 'month'), 1500).toISOString()).toBe('2025-01-31T00:00:00.000Z');
    expect(dueAt(plan('1900-01-31T00:00:00.000Z', 'month'), 1501).toISOString()).toBe('2025-02-28T00:00:00.000Z');
    expect(dueAt(plan('1904-02-29T00:00:00.000Z', 'year'), 124).toISOString()).toBe('2028-02-29T00:00:00.000Z');
  });

  it('refuses a negative or fractional period', () => {
    expect(() => dueAt(plan('2026-01-01T00:00:00.000Z', 'day'), -1)).toThrow(RangeError);
    expect(() => dueAt(plan('2026-01-01T00:00:00.000Z', 'day'), 1.5)).toThrow(RangeError);
  });
});

describe('latestDuePeriod and firstPeriodAfter', () => {
  it('is null before the start, and 0 exactly at it', () => {
    const s = plan('2026-03-01T00:00:00.000Z', 'month');
    expect(latestDuePeriod(s, at('2026-02-28T23:59:59.999Z'))).toBeNull();
    expect(latestDuePeriod(s, at('2026-03-01T00:00:00.000Z'))).toBe(0);
    expect(firstPeriodAfter(s, at('2026-02-01T00:00:00.000Z'))).toBe(0);
  });

  it('picks the latest due period after downtime across three periods (nothing backfilled)', () => {
    const s = plan('2027-01-31T10:00:00.000Z', 'month');
    expect(latestDuePeriod(s, at('2027-04-30T09:59:59.999Z'))).toBe(2); // Mar 31 is due, Apr 30 not yet
    expect(latestDuePeriod(s, at('2027-04-30T10:00:00.000Z'))).toBe(3);
    expect(firstPeriodAfter(s, at('2027-04-30T10:00:00.000Z'))).toBe(4);
  });

  it.each<[PlanInterval, number]>([['day', 1], ['day', 7], ['week', 1], ['week', 5], ['month', 1], ['month', 7], ['year', 1], ['year', 3]])(
    'agrees with a walk over the schedule (%s × %i), from a very old start date',
    (interval, n) => {
      const s = plan('1970-01-31T06:30:00.000Z', interval, n);
      for (const iso of ['1970-01-31T06:29:59.999Z', '1999-12-31T23:59:59.999Z', '2000-02-29T06:30:00.000Z', '2026-11-23T21:00:00.000Z', '2100-03-01T00:00:00.000Z']) {
        const now = at(iso);
        let walked: number | null = null;
        for (let k = 0; dueAt(s, k) <= now; k++) walked = k;
        expect(latestDuePeriod(s, now)).toBe(walked);
      }
    },
  );

  it('lands exactly on each due time, and one millisecond before it', () => {
    const s = plan('2028-02-29T00:00:00.000Z', 'year');
    for (let k = 1; k < 10; k++) {
      const due = dueAt(s, k);
      expect(latestDuePeriod(s, due)).toBe(k);
      expect(latestDuePeriod(s, new Date(due.getTime() - 1))).toBe(k - 1);
    }
  });
});
