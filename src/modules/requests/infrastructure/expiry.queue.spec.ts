import type { Queue } from 'bullmq';
import type { ExpiryJob } from '../../../common/queue/queues';
import { expiryDueAt } from '../domain/expiry-due';
import { ExpiryQueue } from './expiry.queue';

/** What the producer remembers of its adds (test/integration/expiry-jobs.spec.ts runs it on Redis). */
describe('ExpiryQueue', () => {
  function producer(fail: () => boolean) {
    const adds: string[] = [];
    const queue = {
      add: async (_name: string, _data: ExpiryJob, opts: { jobId: string }) => {
        adds.push(opts.jobId);
        if (fail()) throw new Error('Redis away');
        return {};
      },
    } as unknown as Queue<ExpiryJob>;
    return { expiry: new ExpiryQueue(queue), adds };
  }

  it('adds one job per due second, however many requests expire in it', async () => {
    const { expiry, adds } = producer(() => false);
    const base = Date.now() + 60_000;
    const second = expiryDueAt(base);
    await Promise.all([0, 1, 2].map((i) => expiry.schedule(new Date(second - 1 - i))));
    expect(expiry.schedule(new Date(second - 500))).toBeNull();
    await expiry.schedule(new Date(second + 1));
    expect(adds).toEqual([`expire-at-${second}`, `expire-at-${second + 1000}`]);
  });

  it('an add that failed is not remembered: the next request due then adds again', async () => {
    let failing = true;
    const { expiry, adds } = producer(() => failing);
    const at = new Date(Date.now() + 60_000);
    await expect(expiry.schedule(at)).rejects.toThrow('Redis away');
    failing = false;
    await expiry.schedule(at);
    expect(expiry.schedule(at)).toBeNull();
    expect(adds).toHaveLength(2);
  });
});
