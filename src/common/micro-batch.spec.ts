import { MicroBatch } from './micro-batch';

describe('MicroBatch', () => {
  it('runs the calls of one event-loop turn as one batch, answering each in order', async () => {
    const runs: number[][] = [];
    const b = new MicroBatch<number, number>(async (xs) => {
      runs.push(xs);
      return xs.map((x) => x * 10);
    });
    const first = await Promise.all([b.submit(1), b.submit(2), b.submit(3)]);
    const second = await b.submit(4);
    expect(first).toEqual([10, 20, 30]);
    expect(second).toBe(40);
    expect(runs).toEqual([[1, 2, 3], [4]]);
  });

  it('splits at the maximum size', async () => {
    const runs: number[][] = [];
    const b = new MicroBatch<number, number>(async (xs) => {
      runs.push(xs);
      return xs;
    }, 2);
    await Promise.all([1, 2, 3, 4, 5].map((x) => b.submit(x)));
    expect(runs).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('rejects every caller of a failed batch, and keeps working', async () => {
    let fail = true;
    const b = new MicroBatch<number, number>(async (xs) => {
      if (fail) throw new Error('database away');
      return xs;
    });
    const results = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(b.submit(3)).resolves.toBe(3);
  });
});
