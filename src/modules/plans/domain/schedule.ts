/**
 * When the charges of a recurring plan fall due (DESIGN §5). Charge k is due at
 * start_at + k × interval_count × interval, always computed from start_at (never from the previous date, so
 * a clamped date does not drift: Jan 31 → Feb 28 → Mar 31), in UTC, clamped to the end of shorter months.
 * Pure: no clock, no I/O.
 */
export type PlanInterval = 'day' | 'week' | 'month' | 'year';

export const PLAN_INTERVALS: readonly PlanInterval[] = ['day', 'week', 'month', 'year'];

export interface Schedule {
  startAt: Date;
  interval: PlanInterval;
  /** 1–12 */
  intervalCount: number;
}

const DAY_MS = 86_400_000;

/** The due time of charge k (k = 0, 1, …). */
export function dueAt(s: Schedule, k: number): Date {
  if (!Number.isSafeInteger(k) || k < 0) throw new RangeError(`period index must be a non-negative integer, got ${k}`);
  switch (s.interval) {
    case 'day':
      return new Date(s.startAt.getTime() + k * s.intervalCount * DAY_MS);
    case 'week':
      return new Date(s.startAt.getTime() + k * s.intervalCount * 7 * DAY_MS);
    case 'month':
      return addMonthsClamped(s.startAt, k * s.intervalCount);
    case 'year':
      return addMonthsClamped(s.startAt, k * s.intervalCount * 12);
  }
}

/**
 * The latest period due at `now` (due(k) ≤ now), or null before the first. After downtime only this one is
 * charged: the periods before it are skipped, never backfilled.
 */
export function latestDuePeriod(s: Schedule, now: Date): number | null {
  const t = now.getTime();
  if (t < s.startAt.getTime()) return null;
  let k = estimatePeriod(s, t);
  // The estimate is within one period of the answer; step to the exact one.
  while (k > 0 && dueAt(s, k).getTime() > t) k--;
  while (dueAt(s, k + 1).getTime() <= t) k++;
  return k;
}

/** The first period due strictly after `now` (what a resumed plan charges next: nothing is backfilled). */
export function firstPeriodAfter(s: Schedule, now: Date): number {
  const latest = latestDuePeriod(s, now);
  return latest === null ? 0 : latest + 1;
}

function estimatePeriod(s: Schedule, t: number): number {
  const start = s.startAt;
  switch (s.interval) {
    case 'day':
    case 'week': {
      const periodMs = s.intervalCount * (s.interval === 'day' ? 1 : 7) * DAY_MS;
      return Math.floor((t - start.getTime()) / periodMs);
    }
    case 'month':
    case 'year': {
      const now = new Date(t);
      const months = (now.getUTCFullYear() - start.getUTCFullYear()) * 12 + (now.getUTCMonth() - start.getUTCMonth());
      const per = s.intervalCount * (s.interval === 'year' ? 12 : 1);
      return Math.max(0, Math.floor(months / per));
    }
  }
}

function addMonthsClamped(start: Date, months: number): Date {
  const total = start.getUTCMonth() + months;
  const year = start.getUTCFullYear() + Math.floor(total / 12);
  const month = ((total % 12) + 12) % 12;
  const day = Math.min(start.getUTCDate(), daysInMonth(year, month));
  return new Date(
    Date.UTC(year, month, day, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()),
  );
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}
