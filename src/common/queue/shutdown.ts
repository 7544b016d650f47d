import { getQueueToken } from '@nestjs/bullmq';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ALL_QUEUES } from './queues';

/** How long Redis gets to answer a PING before the queues are closed without waiting for it. */
const PING_MS = 1000;
/** How long close waits for the queues' Redis connections to finish politely before dropping them. */
const SHUTDOWN_GRACE_MS = 10_000;

const logger = new Logger('Shutdown');

/** Whether the Redis behind a queue answers a PING within PING_MS (never throws). */
async function answers(q: Queue): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<false>((r) => (timer = setTimeout(() => r(false), PING_MS)));
  const client = q.getBackend().client as Promise<unknown> as Promise<{ ping(): Promise<string> }>;
  const pong = (async () => (await (await client).ping()) === 'PONG')().catch(() => false);
  try {
    return await Promise.race([pong, silent]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * app.close(), without waiting on a Redis that does not answer for the queues (the producers' side). Their
 * connections end with QUIT, which waits for a stalled Redis, and for one away until it is back: an API process
 * took as long as a stall to close (once past a test's 60 s in CI, a helper traced it). With Redis silent at
 * the start the queues are closed forced, and should it stop answering during the close their connections are
 * dropped after a grace. An add still waiting for Redis is dropped with them; the re-drives cover each (the
 * outbox and notification re-drives, the expiry sweep, the chain scan). The processors' workers close as
 * before, letting running jobs finish and record: a worker stopped while Redis is away still waits for it.
 */
export async function closeBounded(app: INestApplicationContext): Promise<void> {
  const queues = ALL_QUEUES.flatMap((name) => {
    try {
      return [app.get<Queue>(getQueueToken(name), { strict: false })];
    } catch {
      return [];
    }
  });
  if (queues.length > 0 && !(await answers(queues[0]))) {
    logger.warn(`Redis does not answer: closing the ${queues.length} queues without waiting for it`);
    await Promise.all(queues.map((q) => q.getBackend().close(true)));
  }
  const closing = app.close();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), SHUTDOWN_GRACE_MS)));
  try {
    if ((await Promise.race([closing, late])) !== 'late') return;
  } finally {
    clearTimeout(timer);
  }
  logger.error(`still closing after ${SHUTDOWN_GRACE_MS} ms (Redis not answering?): dropping the queues' Redis connections`);
  for (const q of queues) void q.disconnect().catch(() => undefined);
  await closing;
}
