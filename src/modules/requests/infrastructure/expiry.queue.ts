import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { EXPIRY_JOBS, QUEUES, type ExpiryJob } from '../../../common/queue/queues';
import { expiryDueAt } from '../domain/expiry-due';

/** Due moments this process remembers having a job for; past it forgets the oldest (a re-add is a no-op). */
const REMEMBERED_DUE_MOMENTS = 100_000;

/**
 * Producer of the expiry queue: one delayed job per due moment (the next whole second after an expires_at),
 * which stores the expiry of every request lapsed by then (ExpiryProcessor). Requests created together expire
 * together, so at 1,000 creates a second this adds one job a second, not a thousand, and the worker runs one
 * batch UPDATE for them, not a thousand transactions. The job id is the due moment, so processes that add the
 * same moment add one job (BullMQ ignores an add under an id it holds).
 */
@Injectable()
export class ExpiryQueue {
  /** Due moments this process has added (true) or is adding: creates of one second share the first one's add. */
  private readonly added = new Map<number, true | Promise<void>>();

  constructor(@InjectQueue(QUEUES.expiry) private readonly queue: Queue<ExpiryJob>) {}

  /** The add of the job that expires a request at `expiresAt`; null when this process has added it already. */
  schedule(expiresAt: Date): Promise<void> | null {
    const dueAt = expiryDueAt(expiresAt.getTime());
    const known = this.added.get(dueAt);
    if (known === true) return null;
    if (known) return known;
    const adding = this.queue
      .add(EXPIRY_JOBS.due, { dueAt }, { jobId: `expire-at-${dueAt}`, delay: Math.max(0, dueAt - Date.now()) })
      .then(
        () => void this.added.set(dueAt, true),
        (e: unknown) => {
          // Not added: the next create due then tries again (the sweep stores these meanwhile).
          this.added.delete(dueAt);
          throw e;
        },
      );
    this.added.set(dueAt, adding);
    this.forgetPast();
    return adding;
  }

  /** Moments that have passed are dropped; past the bound the oldest remembered go too. */
  private forgetPast(): void {
    if (this.added.size <= REMEMBERED_DUE_MOMENTS) return;
    const now = Date.now();
    for (const dueAt of this.added.keys()) if (dueAt < now) this.added.delete(dueAt);
    for (const dueAt of this.added.keys()) {
      if (this.added.size <= REMEMBERED_DUE_MOMENTS / 2) break;
      this.added.delete(dueAt);
    }
  }
}
