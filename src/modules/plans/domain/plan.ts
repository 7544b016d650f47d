import { dueAt, latestDuePeriod, firstPeriodAfter, type PlanInterval, type Schedule } from './schedule';
import { doubling } from '../../../common/time';

export type PlanStatus = 'active' | 'paused' | 'canceled' | 'completed';
export type PauseReason = 'merchant' | 'unpaid';
export const PLAN_STATUSES: readonly PlanStatus[] = ['active', 'paused', 'canceled', 'completed'];

/** A recurring plan as the domain sees it (DESIGN §5): no ORM, no HTTP. */
export interface Plan {
  id: string;
  partnerId: string;
  merchantId: string;
  testMode: boolean;
  token: string;
  title: string;
  fiatAmount: number;
  fiatCurrency: string;
  interval: PlanInterval;
  intervalCount: number;
  startAt: Date;
  maxCharges: number | null;
  expiryMinutes: number;
  payerName: string | null;
  payerEmail: string | null;
  metadata: Record<string, string>;
  status: PlanStatus;
  pauseReason: PauseReason | null;
  /** The period next_charge_at belongs to. */
  nextPeriodIndex: number;
  /** Set exactly while active. */
  nextChargeAt: Date | null;
  chargesCreated: number;
  /** Charges that expired unpaid since the last paid one (or the last resume). */
  missedInRow: number;
  /** The period of the plan's newest charge, null before the first. */
  latestChargePeriod: number | null;
  /** Attempts at the due charge that failed in a row (the charge could not be created); 0 once the plan moves on. */
  chargeFailures: number;
  /** While chargeFailures > 0: the due charge is not tried again before this. */
  retryAt: Date | null;
  createdAt: Date;
}

/** The plan's schedule, for the pure schedule functions. */
export function scheduleOf(p: Pick<Plan, 'startAt' | 'interval' | 'intervalCount'>): Schedule {
  return { startAt: p.startAt, interval: p.interval, intervalCount: p.intervalCount };
}

/** What a plan's row becomes: the fields the use cases change. */
export type PlanChange = Pick<
  Plan,
  'status' | 'pauseReason' | 'nextPeriodIndex' | 'nextChargeAt' | 'chargesCreated' | 'missedInRow' | 'latestChargePeriod' | 'chargeFailures' | 'retryAt'
>;

/** A due plan moved on (charged, skipped, resumed): a failed attempt at an earlier due charge no longer counts. */
const NO_FAILURES = { chargeFailures: 0, retryAt: null } as const;

/**
 * Which period a due plan charges now: only the latest due one (after downtime the ones before it are skipped,
 * never backfilled), and never one before the period the plan is waiting for (an advance may have moved ahead).
 */
export function periodToCharge(p: Plan, now: Date): number {
  return Math.max(p.nextPeriodIndex, latestDuePeriod(scheduleOf(p), now) ?? 0);
}

/**
 * The last due time a plan may have: timestamps leave the service as ISO 8601 with four-digit years, and
 * Date.toISOString() writes year 10000 as `+010000-…`. A plan whose next period would fall later completes.
 */
export const LAST_DUE_AT = new Date('9999-12-31T23:59:59.999Z');

/** How far ahead a plan may start, in calendar years: far enough for any real plan, far from LAST_DUE_AT. */
export const START_AT_MAX_AHEAD_YEARS = 10;

/** Whether a plan may start at `startAt`, seen at `now`. */
export function startAtAllowed(startAt: Date, now: Date): boolean {
  const latest = new Date(now);
  latest.setUTCFullYear(latest.getUTCFullYear() + START_AT_MAX_AHEAD_YEARS);
  return startAt <= latest;
}

/**
 * After the charge of period k was created: the next period, or completed at max_charges (DESIGN §8) or
 * when the next period would fall after LAST_DUE_AT (the test clock can advance a plan that far).
 */
export function afterCharge(p: Plan, k: number, created: boolean): PlanChange {
  const chargesCreated = p.chargesCreated + (created ? 1 : 0);
  // k is at least next_period_index, past every earlier charge; not created means period k's charge existed.
  const moved = { pauseReason: null, nextPeriodIndex: k + 1, chargesCreated, missedInRow: p.missedInRow, latestChargePeriod: k, ...NO_FAILURES };
  if (p.maxCharges !== null && chargesCreated >= p.maxCharges) return { ...moved, status: 'completed', nextChargeAt: null };
  return { ...moved, ...dueFrom(p, k + 1) };
}

/**
 * The plan goes on from period k: active and due at its date, or completed when that date falls after
 * LAST_DUE_AT. Every change that schedules a period goes through here (a charge, a skip, a resume, a late
 * payment), so none can schedule, and then charge, a period in year 10000.
 */
function dueFrom(p: Plan, k: number): Pick<PlanChange, 'status' | 'pauseReason' | 'nextPeriodIndex' | 'nextChargeAt'> {
  const next = dueAt(scheduleOf(p), k);
  if (next > LAST_DUE_AT) return { status: 'completed', pauseReason: null, nextPeriodIndex: k, nextChargeAt: null };
  return { status: 'active', pauseReason: null, nextPeriodIndex: k, nextChargeAt: next };
}

/** Period k skipped (the merchant is disabled): not a charge, not a miss; the plan waits for k + 1. */
export function afterSkip(p: Plan, k: number): PlanChange {
  return { ...changeOf(p), ...dueFrom(p, k + 1), ...NO_FAILURES };
}

/** Resume: the first scheduled date from now on, nothing backfilled; the missed count starts again. */
export function afterResume(p: Plan, now: Date): PlanChange {
  const k = Math.max(firstPeriodAfter(scheduleOf(p), now), p.nextPeriodIndex);
  return { ...changeOf(p), ...dueFrom(p, k), missedInRow: 0, ...NO_FAILURES };
}

/**
 * Of the plan's charges that lapsed unpaid, how many count as misses (DESIGN §5: PLAN_MAX_MISSED in a row pause
 * the plan): those of periods after the plan's latest paid charge. An older charge lapsing after a newer one was
 * paid (charges that overlap: a daily plan whose charges stay payable for days, and a payer who pays the newest)
 * breaks no run of payments; counted, it paused a plan whose payer had just paid (the last session's note).
 */
export function missesAmong(lapsedPeriods: readonly number[], latestPaidPeriod: number | null): number {
  return lapsedPeriods.filter((k) => latestPaidPeriod === null || k > latestPaidPeriod).length;
}

/**
 * A charge of the plan was verified (DESIGN §5: a paid charge resets the missed count). `missedSince` is how
 * many of its charges lapsed unpaid after the plan's latest paid charge (this one, or a later one paid
 * before): the misses still in a row once this payment is counted. The count becomes that, never more than
 * it was (a merchant's resume started it again from 0). A plan paused for unpaid whose count is now below
 * `maxMissed` was paused by a miss this payment takes back: paid in the grace window after its expires_at, or
 * before it and verified after the expiry was stored (deep confirmations, an outage; a time-edge hunt found
 * such a plan left paused for good). It goes on as if never paused: due at the later of its next period and
 * the latest period due by now, as after downtime (that one charged at once, nothing older backfilled). A
 * plan paused by the merchant, canceled or completed keeps its status: only the count changes.
 */
export function afterPaid(p: Plan, missedSince: number, maxMissed: number, now: Date): PlanChange {
  const missedInRow = Math.min(p.missedInRow, missedSince);
  const counted: PlanChange = { ...changeOf(p), missedInRow };
  switch (p.status) {
    case 'paused': {
      if (p.pauseReason !== 'unpaid' || missedInRow >= maxMissed) return counted;
      const k = Math.max(p.nextPeriodIndex, latestDuePeriod(scheduleOf(p), now) ?? 0);
      return { ...counted, ...dueFrom(p, k), ...NO_FAILURES };
    }
    case 'active':
    case 'canceled':
    case 'completed':
      return counted;
  }
}

/** The first wait after a failed charge attempt, doubled after each further failure up to the last. */
export const CHARGE_RETRY_FIRST_MS = 30_000;
export const CHARGE_RETRY_MAX_MS = 15 * 60_000;

/**
 * An attempt at the due charge failed (the charge could not be created: the merchant's currency has no rate,
 * the mode's chain is off, any error): the plan stays due for the same period and is tried again after a
 * backoff, so plans that keep failing wait their turn instead of sorting first in every scheduler run. When
 * it is retried (the cause fixed) it charges the latest due period then, as after any downtime.
 */
export function afterChargeFailed(p: Plan, now: Date): PlanChange {
  const chargeFailures = p.chargeFailures + 1;
  const wait = doubling(CHARGE_RETRY_FIRST_MS, CHARGE_RETRY_MAX_MS, chargeFailures - 1);
  return { ...changeOf(p), chargeFailures, retryAt: new Date(now.getTime() + wait) };
}

/** A new plan: a past or present start_at has its latest due period charged at once (DESIGN §8). */
export function firstPeriod(s: Schedule, now: Date): { k: number; dueNow: boolean } {
  const latest = latestDuePeriod(s, now);
  return latest === null ? { k: 0, dueNow: false } : { k: latest, dueNow: true };
}

export function changeOf(p: Plan): PlanChange {
  return {
    status: p.status,
    pauseReason: p.pauseReason,
    nextPeriodIndex: p.nextPeriodIndex,
    nextChargeAt: p.nextChargeAt,
    chargesCreated: p.chargesCreated,
    missedInRow: p.missedInRow,
    latestChargePeriod: p.latestChargePeriod,
    chargeFailures: p.chargeFailures,
    retryAt: p.retryAt,
  };
}
