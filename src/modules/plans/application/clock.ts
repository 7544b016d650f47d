/**
 * The plans' clock: when the scheduler thinks it is. A provider token, so integration tests move time
 * (start the service with `plans: { clock }`); everything else about a charge (created_at, expires_at) is
 * the database's clock, as for every request.
 */
export interface Clock {
  now(): Date;
}

export const PLAN_CLOCK = Symbol('PLAN_CLOCK');

export const systemClock: Clock = { now: () => new Date() };
