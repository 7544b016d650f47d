import { afterCharge, afterChargeFailed, afterPaid, afterResume, afterSkip, CHARGE_RETRY_MAX_MS, LAST_DUE_AT, missesAmong, type PauseReason, type Plan, type PlanStatus } from './plan';

const START = new Date('2027-01-10T00:00:00.000Z');
const NOW = new Date('2027-03-20T12:00:00.000Z');
// A monthly plan whose periods 0 and 1 were charged and missed (then paused for unpaid, by default).
const plan = (over: Partial<Plan> = {}): Plan => ({
  id: 'p', partnerId: 'pa', merchantId: 'm', testMode: true, token: 't', title: 'Gym', fiatAmount: 2500, fiatCurrency: 'usd',
  interval: 'month', intervalCount: 1, startAt: START, maxCharges: null, expiryMinutes: 10080, payerName: null, payerEmail: null,
  metadata: {}, status: 'paused', pauseReason: 'unpaid', nextPeriodIndex: 2, nextChargeAt: null, chargesCreated: 2, missedInRow: 2,
  latestChargePeriod: 1, chargeFailures: 0, retryAt: null, createdAt: START, ...over,
});

describe('afterPaid', () => {
  it('a plan paused for unpaid goes on when no miss is left after the payment, as if never paused: the latest due period charged at once', () => {
    // Now (Mar 20) is after period 2 (Mar 10), which fell due while the plan was paused: due now, not skipped.
    expect(afterPaid(plan(), 0, 2, NOW)).toEqual({
      status: 'active', pauseReason: null, nextPeriodIndex: 2, nextChargeAt: new Date('2027-03-10T00:00:00.000Z'), chargesCreated: 2,
      missedInRow: 0, latestChargePeriod: 1, chargeFailures: 0, retryAt: null,
    });
    // Before period 2 is due: its own date.
    expect(afterPaid(plan(), 0, 2, new Date('2027-03-01T00:00:00.000Z'))).toMatchObject({ status: 'active', nextPeriodIndex: 2, nextChargeAt: new Date('2027-03-10T00:00:00.000Z') });
    // Long after: only the latest due period, nothing older backfilled.
    expect(afterPaid(plan(), 0, 2, new Date('2027-06-15T00:00:00.000Z'))).toMatchObject({ nextPeriodIndex: 5, nextChargeAt: new Date('2027-06-10T00:00:00.000Z') });
  });

  it('goes on with the misses after the payment counted, when they are too few to pause', () => {
    expect(afterPaid(plan(), 1, 2, NOW)).toMatchObject({ status: 'active', pauseReason: null, missedInRow: 1 });
  });

  it('a payment never raises the count (a resume started it again from 0)', () => {
    const resumed = plan({ status: 'active', pauseReason: null, missedInRow: 0, nextChargeAt: new Date('2027-04-10T00:00:00.000Z') });
    expect(afterPaid(resumed, 2, 2, NOW)).toMatchObject({ status: 'active', missedInRow: 0 });
  });

  it.each<[string, PlanStatus, PauseReason | null, number]>([
    ['a plan paused for unpaid with as many misses after the payment as pause one', 'paused', 'unpaid', 2],
    ['a plan paused by the merchant', 'paused', 'merchant', 0],
    ['an active plan', 'active', null, 1],
    ['a canceled plan', 'canceled', null, 0],
    ['a completed plan', 'completed', null, 0],
  ])('%s: only the missed count changes, to the misses after the payment', (_, status, pauseReason, missedSince) => {
    const p = plan({ status, pauseReason, nextChargeAt: status === 'active' ? new Date('2027-03-10T00:00:00.000Z') : null });
    expect(afterPaid(p, missedSince, 2, NOW)).toEqual({
      status, pauseReason, nextPeriodIndex: 2, nextChargeAt: p.nextChargeAt, chargesCreated: 2, missedInRow: missedSince, latestChargePeriod: 1, chargeFailures: 0, retryAt: null,
    });
  });
});

describe('afterChargeFailed', () => {
  it('waits 30 s after the first failure, doubling, at most 15 minutes; the plan stays due for the same period', () => {
    const due = plan({ status: 'active', pauseReason: null, nextChargeAt: new Date('2027-03-10T00:00:00.000Z'), missedInRow: 0 });
    let p = due;
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      const next = afterChargeFailed(p, NOW);
      expect(next).toMatchObject({ status: 'active', nextPeriodIndex: 2, nextChargeAt: due.nextChargeAt, chargesCreated: 2, chargeFailures: i + 1 });
      waits.push(next.retryAt!.getTime() - NOW.getTime());
      p = { ...p, ...next };
    }
    expect(waits).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]);
    expect(afterChargeFailed({ ...p, chargeFailures: 10_000 }, NOW).retryAt).toEqual(new Date(NOW.getTime() + CHARGE_RETRY_MAX_MS));
  });

  it('a charge or a skip forgets the failures; a charge records the latest period', () => {
    const failing = plan({ status: 'active', pauseReason: null, nextChargeAt: new Date('2027-03-10T00:00:00.000Z'), chargeFailures: 3, retryAt: NOW });
    expect(afterCharge(failing, 2, true)).toMatchObject({ chargeFailures: 0, retryAt: null, latestChargePeriod: 2, nextPeriodIndex: 3 });
    expect(afterSkip(failing, 2)).toMatchObject({ chargeFailures: 0, retryAt: null, latestChargePeriod: 1, nextPeriodIndex: 3 });
  });
});

describe('afterCharge at the end of four-digit years', () => {
  it('completes a plan whose next period would fall after 9999-12-31 (next_charge_at must stay ISO 8601 with four digits)', () => {
    // Every 12 years from 2035-06-01: period 663 is due in 9991, period 664 would be in 10003.
    const p = plan({ interval: 'year', intervalCount: 12, startAt: new Date('2035-06-01T00:00:00.000Z'), status: 'active', pauseReason: null, missedInRow: 0 });
    const last = afterCharge(p, 663, true);
    expect(last).toMatchObject({ status: 'completed', nextChargeAt: null, nextPeriodIndex: 664 });
    const before = afterCharge(p, 662, true);
    expect(before.status).toBe('active');
    expect(before.nextChargeAt!.toISOString()).toBe('9991-06-01T00:00:00.000Z');
    expect(before.nextChargeAt! <= LAST_DUE_AT).toBe(true);
  });
});

describe('every change that schedules a period, at the end of four-digit years', () => {
  // Daily from 9999-12-30: period 1 is due 9999-12-31, period 2 would be 10000-01-01.
  const daily = (over: Partial<Plan> = {}) =>
    plan({ interval: 'day', intervalCount: 1, startAt: new Date('9999-12-30T00:00:00.000Z'), nextPeriodIndex: 1, chargesCreated: 1, latestChargePeriod: 0, missedInRow: 0, ...over });
  const completed = { status: 'completed', pauseReason: null, nextChargeAt: null, nextPeriodIndex: 2 };

  it('a skip of the last period completes the plan (it scheduled 10000-01-01, then charged it)', () => {
    expect(afterSkip(daily({ status: 'active', pauseReason: null }), 1)).toMatchObject(completed);
  });

  it('a resume past the last period completes the plan', () => {
    expect(afterResume(daily({ status: 'paused', pauseReason: 'merchant' }), new Date('9999-12-31T06:00:00.000Z'))).toMatchObject({ ...completed, missedInRow: 0 });
    // Before it: due on its date.
    expect(afterResume(daily({ status: 'paused', pauseReason: 'merchant' }), new Date('9999-12-30T06:00:00.000Z'))).toMatchObject({
      status: 'active', nextPeriodIndex: 1, nextChargeAt: new Date('9999-12-31T00:00:00.000Z'),
    });
  });

  it('a late payment that takes back the pause, past the last period, completes the plan', () => {
    const paused = daily({ status: 'paused', pauseReason: 'unpaid', nextPeriodIndex: 2, chargesCreated: 2, latestChargePeriod: 1, missedInRow: 2 });
    expect(afterPaid(paused, 0, 2, new Date('9999-12-31T12:00:00.000Z'))).toMatchObject({ ...completed, missedInRow: 0 });
  });
});

describe('missesAmong', () => {
  it('counts the lapsed charges of periods after the latest paid one, every one when none was paid', () => {
    expect(missesAmong([0, 1], null)).toBe(2);
    expect(missesAmong([3, 4], 2)).toBe(2);
    expect(missesAmong([1, 2, 3, 4], 2)).toBe(2);
    // An older charge lapsing after a newer one was paid breaks no run of payments.
    expect(missesAmong([0, 1], 2)).toBe(0);
    expect(missesAmong([2], 2)).toBe(0);
    expect(missesAmong([], null)).toBe(0);
  });
});
