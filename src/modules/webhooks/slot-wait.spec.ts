import { slotWaitMs } from './slot-wait';

describe('slotWaitMs', () => {
  it.each([
    [0, 250],
    [1, 500],
    [2, 1000],
    [4, 4000],
    [5, 4000],
    [1000, 4000],
  ])('after %i waits the middle of the spread is %i ms', (waits, base) => {
    expect(slotWaitMs(waits, () => 0.5)).toBe(base);
    expect(slotWaitMs(waits, () => 0)).toBe(base / 2);
    expect(slotWaitMs(waits, () => 0.999999)).toBeLessThanOrEqual(base * 1.5);
  });
});
