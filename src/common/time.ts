/** Every timestamp leaves the service as UTC with milliseconds and a Z (DESIGN §3). */
export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}
