/** 32 hex characters: an Idempotency-Key (spec §4.1's charset) for a create a page may send more than once. */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
