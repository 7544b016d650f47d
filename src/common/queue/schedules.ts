import type { Logger } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';

export interface Schedule {
  queue: Queue;
  /** The job scheduler id, also the name of the jobs it makes. */
  id: string;
  every: number;
  opts?: JobsOptions;
  /** Runs after the schedule had to be created (at first start, or after Redis came back empty). */
  onCreated?: () => Promise<unknown>;
}

const CHECK_MS = 5000;

/**
 * Keeps repeating jobs scheduled: one BullMQ job scheduler per id for the whole deployment, whatever the
 * number of workers. Redis can come back empty, schedules included, so every worker checks every few
 * seconds and recreates a missing one. Returns a function that stops the checks.
 */
export function keepSchedules(schedules: Schedule[], logger: Logger): Promise<() => void> {
  const ensure = async () => {
    for (const s of schedules) {
      try {
        if (await s.queue.getJobScheduler(s.id)) continue;
        await s.queue.upsertJobScheduler(s.id, { every: s.every }, { name: s.id, opts: { removeOnComplete: 100, removeOnFail: 100, ...s.opts } });
        await s.onCreated?.();
      } catch (e) {
        logger.warn(`cannot check the ${s.id} schedule: ${(e as Error).message}`);
      }
    }
  };
  return ensure().then(() => {
    const timer = setInterval(() => void ensure(), CHECK_MS);
    timer.unref();
    return () => clearInterval(timer);
  });
}
