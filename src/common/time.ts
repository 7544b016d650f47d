/** Every timestamp leaves the service as UTC with milliseconds and a Z (DESIGN §3). */
export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/** A wait that doubles: `firstMs` after the first try (n = 0), twice that after the next, never over `maxMs`. */
export function doubling(firstMs: number, maxMs: number, n: number): number {
  return Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(n, 0), 40));
}
