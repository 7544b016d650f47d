import { getQueueToken } from '@nestjs/bullmq';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ALL_QUEUES } from './queues';

/** How long close waits for the queues' Redis connections to finish politely before dropping them. */
const SHUTDOWN_GRACE_MS = 10_000;

const logger = new Logger('Shutdown');

/**
 * app.close(), without waiting for ever on a Redis that does not answer the queues (the producers' side).
 * Their connections end with QUIT, which waits for a stalled Redis, and for one away until it is back: an API
 * process took as long as a stall to close (once past a test's 60 s in CI). Past a grace
 * their connections are dropped and the close goes on; an add still waiting for Redis is dropped with them,
 * and the re-drives cover each (the outbox and notification re-drives, the expiry sweep, the chain scan).
 * Nothing is forced before the grace: the HTTP server and the workers are still finishing then, and their
 * adds must not fail (a gate slot taken for an attempt whose add failed waits for its lease). The workers
 * close as before, letting running jobs finish and record: a worker stopped while Redis is away still waits.
 */
export async function closeBounded(app: INestApplicationContext): Promise<void> {
  const queues = ALL_QUEUES.flatMap((name) => {
    try {
      return [app.get<Queue>(getQueueToken(name), { strict: false })];
    } catch {
      return [];
    }
  });
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
