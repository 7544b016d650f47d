/**
 * Rate limits count per clock minute (spec §8). A test that must stay inside one window waits, when fewer
 * than `needMs` remain in the current minute, until the next minute has begun.
 */
export async function withinOneMinute(needMs: number): Promise<void> {
  const remaining = 60000 - (Date.now() % 60000);
  if (remaining < needMs) await new Promise((r) => setTimeout(r, remaining + 50));
}
