import { EXPIRY_GRAIN_MS, expiryDueAt } from './expiry-due';

describe('expiryDueAt', () => {
  const second = Date.UTC(2026, 10, 27, 9, 0, 0);

  it('is the next whole second after expires_at', () => {
    expect(expiryDueAt(second + 1)).toBe(second + EXPIRY_GRAIN_MS);
    expect(expiryDueAt(second + 999)).toBe(second + EXPIRY_GRAIN_MS);
  });

  it('is strictly after an expires_at on a whole second (its microseconds may be past the millisecond)', () => {
    expect(expiryDueAt(second)).toBe(second + EXPIRY_GRAIN_MS);
  });

  it('shares one moment for every expires_at within the second, and never runs before any of them', () => {
    const moments = new Set<number>();
    for (let ms = 0; ms < EXPIRY_GRAIN_MS; ms += 7) {
      const dueAt = expiryDueAt(second + ms);
      expect(dueAt).toBeGreaterThan(second + ms);
      moments.add(dueAt);
    }
    expect([...moments]).toEqual([second + EXPIRY_GRAIN_MS]);
  });
});
