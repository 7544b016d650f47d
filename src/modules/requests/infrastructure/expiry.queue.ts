import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { EXPIRY_JOBS, QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { expiryDueAt } from '../domain/expiry-due';

/**
 * How long this process trusts its own add of a moment's job. Past it the next request due then adds it again
 * (a no-op while Redis holds the job): a Redis that restarted empty or failed over loses the job, and a
 * process that remembered it for good would never add it back (the sweep would store those expiries).
 */
const TRUST_ADD_MS = 10_000;

/**
 * A run that fails (the database away, deadlocks past the sweep's own retries) is tried again: a failed job
 * keeps its id, and an add under it is ignored, so no later create could bring the moment back.
 */
const DUE_JOB_OPTIONS = { attempts: 6, backoff: { type: 'exponential', delay: 1000 } } as const;

/**
 * Producer of the expiry queue: one delayed job per due moment (the first whole second after an expires_at),
 * which stores the expiry of every request lapsed by then (ExpiryProcessor). Requests whose expires_at fall in
 * one second share its job: at 1,000 creates a second with one expiry this adds one job a second, not a
 * thousand, and the worker runs one batch UPDATE for them, not a thousand transactions. The job id is the
 * moment, so processes adding the same moment add one job (BullMQ ignores an add under an id it holds).
 */
@Injectable()
export class ExpiryQueue {
  /** Moments this process added (`at`, by its clock) or is adding (`adding`), oldest add first. */
  private readonly added = new Map<number, { at: number; adding: Promise<void> | null }>();

  constructor(@InjectQueue(QUEUES.expiry) private readonly queue: Queue<ExpiryJob>) {}

  /** The add of the job that expires a request at `expiresAt`; null when this process added it just now. */
  schedule(expiresAt: Date): Promise<void> | null {
    const now = Date.now();
    this.forgetOlderThan(now - TRUST_ADD_MS);
    const dueAt = expiryDueAt(expiresAt.getTime());
    const known = this.added.get(dueAt);
    if (known) return known.adding;
    const entry = { at: now, adding: null as Promise<void> | null };
    entry.adding = this.queue
      .add(EXPIRY_JOBS.due, { dueAt }, { jobId: `expire-at-${dueAt}`, delay: Math.max(0, dueAt - now), ...DUE_JOB_OPTIONS })
      .then(
        () => void (entry.adding = null),
        (e: unknown) => {
          // Not added: the next request due then adds it (the sweep stores these meanwhile).
          if (this.added.get(dueAt) === entry) this.added.delete(dueAt);
          throw e;
        },
      );
    this.added.set(dueAt, entry);
    return entry.adding;
  }

  /** Entries are in the order they were added, so the stale ones are at the front. */
  private forgetOlderThan(cutoff: number): void {
    for (const [dueAt, { at }] of this.added) {
      if (at >= cutoff) break;
      this.added.delete(dueAt);
    }
  }
}
