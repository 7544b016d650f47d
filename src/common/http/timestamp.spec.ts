import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ListRequestsQuery } from '../../modules/requests/http/request.dto';
import { inUtc, isTimestamp } from './timestamp';

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
    '2026-11-26T10:00:00z',
    '2026-11-26T10:00:00.1234567891Z',
    '2026-11-26T10:00:00+14:00',
    '2026-11-26T10:00:00-12:00',
    '2026-11-26T10:00:00+15:59',
    '2026-11-26T10:00-1559',
  ])('takes %s', (v) => {
    expect(isTimestamp(v)).toBe(true);
  });

  it.each([
    '2026', '2026-11', '2026-W48', '2026-W48-3', '2026-330', '20261126', '2026-11-26T10', '2026-11-26T10:00:00,5Z',
    '2026-11-26T10:00:00+00', '2026-02-30T00:00:00Z', '2026-11-26T24:00:00Z', '2026-11-26 10:00:00Z', 'yesterday', '',
    // Offsets JavaScript reads and Postgres refuses ("time zone displacement out of range": a 500 before).
    '2024-01-01T00:00+16:00', '2024-01-01T00:00+23:59', '2024-01-01T00:00-1800', '2024-01-01T00:00:00-17:00',
    '2024-01-01T00:00+05:60',
  ])('refuses %s', (v) => {
    expect(isTimestamp(v)).toBe(false);
  });

  it.each([
    ['2026-11-26', '2026-11-26T00:00:00Z'],
    ['2026-11-26T10:00', '2026-11-26T10:00Z'],
    ['2026-11-26T10:00:00.5', '2026-11-26T10:00:00.5Z'],
    ['2026-11-26T10:00:00z', '2026-11-26T10:00:00z'],
    ['2026-11-26T10:00:00+05:30', '2026-11-26T10:00:00+05:30'],
  ])('reads %s as %s (no zone is UTC)', (v, utc) => {
    expect(inUtc(v)).toBe(utc);
    expect(Date.parse(inUtc(v))).toBe(Date.parse(utc));
  });

  it('a list query carries the UTC reading to the repository, and a bad value stays as sent for its 400', () => {
    const q = plainToInstance(ListRequestsQuery, { since: '2026-11-26T10:00', until: '2026-11-27' });
    expect(validateSync(q)).toEqual([]);
    expect([q.since, q.until]).toEqual(['2026-11-26T10:00Z', '2026-11-27T00:00:00Z']);
    const bad = plainToInstance(ListRequestsQuery, { since: '2026-W48' });
    expect(bad.since).toBe('2026-W48');
    expect(validateSync(bad).map((e) => e.property)).toEqual(['since']);
  });
});
