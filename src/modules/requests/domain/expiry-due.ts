/** The grain of expiry jobs: one job stores the expiries of every request that lapses within one second. */
export const EXPIRY_GRAIN_MS = 1000;

/**
 * When the expiry job of a request with this expires_at (epoch ms) runs: the first whole second strictly after
 * it. Strictly, because a stored expires_at has microseconds that its millisecond reading drops: a job at the
 * millisecond itself could run before the request has lapsed in the database.
 */
export function expiryDueAt(expiresAtMs: number): number {
  return (Math.floor(expiresAtMs / EXPIRY_GRAIN_MS) + 1) * EXPIRY_GRAIN_MS;
}
