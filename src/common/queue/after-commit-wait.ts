import type { Logger } from '@nestjs/common';

/**
 * How long a response waits for work queued after its transaction committed. BullMQ's connection keeps
 * commands while Redis is away (its offline queue), so an add never fails then: it waits for Redis. The
 * committed state is in Postgres and a sweep or re-drive carries what the queue would have, so a response
 * never waits longer than this for Redis (issue 10 point 11).
 */
export const AFTER_COMMIT_WAIT_MS = 1000;

/**
 * Waits for `work` at most AFTER_COMMIT_WAIT_MS and never rejects. Past the bound `work` goes on in the
 * background (it completes once Redis is back); a failure, early or late, is logged as a warning naming what
 * recovers it (`fallback`).
 */
export async function waitBriefly(logger: Logger, what: string, fallback: string, work: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const running = work();
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), AFTER_COMMIT_WAIT_MS);
  });
  try {
    if ((await Promise.race([running, late])) === 'late') {
      logger.warn(`${what} still pending after ${AFTER_COMMIT_WAIT_MS} ms (Redis unreachable?); answering now, ${fallback}`);
      running.catch((e: Error) => logger.warn(`${what} failed late: ${e.message}; ${fallback}`));
    }
  } catch (e) {
    logger.warn(`${what} failed: ${(e as Error).message}; ${fallback}`);
  } finally {
    clearTimeout(timer);
  }
}
