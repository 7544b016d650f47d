import { answerAll, MicroBatch } from './micro-batch';

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

  it('settling: the batch answers each call itself, so its parts can fail apart', async () => {
    const runs: string[][] = [];
    const b = MicroBatch.settling<string, string>(async (calls) => {
      runs.push(calls.map((c) => c.input));
      const [ok, bad] = [calls.filter((c) => !c.input.startsWith('x')), calls.filter((c) => c.input.startsWith('x'))];
      await Promise.all([
        answerAll(ok, async (xs) => xs.map((x) => x.toUpperCase())),
        answerAll(bad, async () => {
          throw new Error('refused');
        }),
      ]);
    });
    const results = await Promise.allSettled([b.submit('a'), b.submit('x1'), b.submit('b')]);
    expect(runs).toEqual([['a', 'x1', 'b']]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 'A' },
      { status: 'rejected', reason: new Error('refused') },
      { status: 'fulfilled', value: 'B' },
    ]);
  });

  it('settling: a batch that throws rejects the calls it left unanswered, and only those', async () => {
    const b = MicroBatch.settling<number, number>(async (calls) => {
      calls[0].resolve(1);
      throw new Error('half done');
    });
    const results = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 1 },
      { status: 'rejected', reason: new Error('half done') },
    ]);
    const sync = MicroBatch.settling<number, number>(() => {
      throw new Error('thrown before any promise');
    });
    await expect(sync.submit(3)).rejects.toThrow('thrown before any promise');
  });

  it('settling: a call the batch returns without answering is rejected, not left waiting', async () => {
    const b = MicroBatch.settling<number, number>(async (calls) => calls[0].resolve(10));
    const results = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 10 },
      { status: 'rejected', reason: new Error('MicroBatch: the batch left a call unanswered') },
    ]);
    const answered = new MicroBatch<number, number>(() => {
      throw new Error('run threw before any promise');
    });
    await expect(answered.submit(1)).rejects.toThrow('run threw before any promise');
  });
});
