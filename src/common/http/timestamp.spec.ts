import { isTimestamp } from './timestamp';

describe('isTimestamp: the ISO 8601 forms JavaScript and Postgres both read alike', () => {
  it.each([
    '2026-11-26',
    '2026-11-26T10:00Z',
    '2026-11-26T10:00:00Z',
    '2026-11-26T10:00:00.123Z',
    '2026-11-26T10:00:00.123456Z',
    '2026-11-26T10:00:00+05:30',
    '2026-11-26T10:00:00.123+0000',
    '2026-11-26T10:00:00',
  ])('takes %s', (v) => {
    expect(isTimestamp(v)).toBe(true);
  });

  it.each([
    '2026', '2026-11', '2026-W48', '2026-W48-3', '2026-330', '20261126', '2026-11-26T10', '2026-11-26T10:00:00,5Z',
    '2026-11-26T10:00:00+00', '2026-02-30T00:00:00Z', '2026-11-26T24:00:00Z', '2026-11-26 10:00:00Z', 'yesterday', '',
  ])('refuses %s', (v) => {
    expect(isTimestamp(v)).toBe(false);
  });
});
