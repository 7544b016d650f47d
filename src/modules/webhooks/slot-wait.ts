const FIRST_WAIT_MS = 250;
const MAX_WAIT_MS = 4_000;

/**
 * How long a delivery waits before looking for a free slot of its partner again, after `waits` earlier
 * waits: doubling from 250 ms up to 4 s, each spread over ±50 % so the waiting jobs of a partner do not
 * come back all at once. Short enough that a freed slot is taken within seconds; growing so that hundreds
 * of events of a hanging partner cost tens of Redis calls a second, not thousands.
 */
export function slotWaitMs(waits: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** Math.min(waits, 16));
  return Math.round(base * (0.5 + random()));
}
