import { getQueueToken, WorkerHost } from '@nestjs/bullmq';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Queue, Worker } from 'bullmq';
import { ALL_QUEUES } from './queues';

/** How long Redis gets to answer a PING before the queues and workers are closed without waiting for it. */
const PING_MS = 1000;
/** How long close waits for the queues' Redis connections to finish politely before dropping them. */
const SHUTDOWN_GRACE_MS = 10_000;

const logger = new Logger('Shutdown');

/** Whether the Redis behind a queue or worker answers a PING within PING_MS (never throws). */
async function answers(q: Queue | Worker): Promise<boolean> {
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
 * Closes a BullMQ worker: gracefully (running jobs finish) while its Redis answers, forced when it does not
 * (away, stalled, not connected yet). The graceful close ends with QUIT, and waits for an 'end' event that
 * ioredis never emits for a client it is reconnecting: a worker stopped during a Redis outage never finished
 * closing, even once Redis was back (a helper's hunt). Forced, its running jobs are left to BullMQ's stalled
 * check, which runs them again (they could not have recorded their outcome without Redis anyway). Redis going
 * away during a graceful close is left to closeBounded's grace and the process's hard exit (main.ts).
 */
export async function closeWorker(worker: Worker): Promise<void> {
  await worker.close(!(await answers(worker)));
}

/**
 * app.close(), without waiting on a Redis that does not answer. With Redis silent at the start, every queue
 * and worker is closed forced first (their QUIT would wait for a reconnect: an API process took as long as a
 * stall to close, once past a test's 60 s in CI, and a worker never closed while Redis was away). Should it
 * stop answering during the close, their connections are dropped after a grace.
 */
export async function closeBounded(app: INestApplicationContext): Promise<void> {
  const queues = ALL_QUEUES.flatMap((name) => {
    try {
      return [app.get<Queue>(getQueueToken(name), { strict: false })];
    } catch {
      return [];
    }
  });
  const workers = workersOf(app);
  const probe = queues[0] ?? workers[0];
  if (probe && !(await answers(probe))) {
    logger.warn(`Redis does not answer: closing ${queues.length} queues and ${workers.length} workers without waiting for it`);
    await Promise.all([...queues.map((q) => q.getBackend().close(true)), ...workers.map((w) => w.close(true))]);
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
  for (const q of [...queues, ...workers]) void q.disconnect().catch(() => undefined);
  await closing;
}

function workersOf(app: INestApplicationContext): Worker[] {
  let discovery: DiscoveryService;
  try {
    discovery = app.get(DiscoveryService, { strict: false });
  } catch {
    return []; // no worker role
  }
  return discovery
    .getProviders()
    .map((w) => w.instance as unknown)
    .filter((i): i is WorkerHost => i instanceof WorkerHost)
    .flatMap((h) => {
      try {
        return [h.worker];
      } catch {
        return []; // never started
      }
    });
}
