import { RedisConnections } from '../../src/common/redis/redis.module';
import type { Clock } from '../../src/modules/plans/application/clock';

/** The plans' clock (PLAN_CLOCK, `plans: { clock }` of startService) at a time the test sets. */
export class TestClock implements Clock {
  private t = Date.now();
  now(): Date {
    return new Date(this.t);
  }
  set(d: Date): void {
    this.t = d.getTime();
  }
}

/**
 * Rate limits count per clock minute (spec §8). A test that must stay inside one window waits, when fewer
 * than `needMs` remain in the current minute, until the next minute has begun.
 */
export async function withinOneMinute(needMs: number): Promise<void> {
  const remaining = 60000 - (Date.now() % 60000);
  if (remaining < needMs) await new Promise((r) => setTimeout(r, remaining + 50));
}

let shiftMs = 0;

/**
 * For a test whose calls must count in one window: instead of waiting for the wall clock's next minute, moves
 * the clock that every service of this process names its rate-limit windows by (RedisConnections.now(), Redis's
 * time as the host measured it) forward to just past the start of a minute nothing has counted in yet: each
 * call moves it further, never back. Time runs on from there at its real pace, so the test has the whole minute
 * and the limiters' own code, counters in Redis included, is what runs. Services in other processes keep the real
 * clock: not for tests that count calls there.
 */
export function freshMinute(): void {
  const proto = RedisConnections.prototype;
  if (!jest.isMockFunction(proto.now)) {
    const real = proto.now;
    jest.spyOn(proto, 'now').mockImplementation(function (this: RedisConnections) {
      return real.call(this) + shiftMs;
    });
  }
  // Half a second past the boundary: instances' measured offsets from Redis's clock differ by a few milliseconds.
  const now = Date.now() + shiftMs;
  shiftMs += 60000 - (now % 60000) + 500;
}
