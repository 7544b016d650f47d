import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { PartnerGate } from './partner-gate';

export const DELIVER_JOB = 'deliver';
/** A retry's timer: when it fires, the attempt asks its partner's gate for a slot (it posts nothing itself). */
export const DUE_JOB = 'due';

/**
 * BullMQ's own retries are for infrastructure failures inside the processor (Postgres away): they re-run the
 * same attempt. The spec's retry schedule is a new delayed job per attempt, chosen by DeliveryService.
 */
const JOB_OPTIONS: JobsOptions = { attempts: 5, backoff: { type: 'exponential', delay: 1000 } };
/**
 * A finished attempt's job is dropped at once: the attempt log is in Postgres, and a gate that admits the
 * same attempt again (a re-drive racing a retry's timer) must get a job that runs, finds nothing due and
 * frees the slot, not a duplicate id that BullMQ ignores while the slot stays held.
 */
const DELIVER_OPTIONS: JobsOptions = { ...JOB_OPTIONS, removeOnComplete: true };

/** Deterministic per attempt, so a duplicate relay or re-drive adds nothing (BullMQ 6 refuses ':' in ids). */
export function deliveryJobId(eventId: string, attempt: number): string {
  return `${eventId}-${attempt}`;
}

/** An attempt to queue: the event, its attempt number and its partner (the delivery slots are per partner). */
export interface DueAttempt {
  id: string;
  attempt: number;
  partnerId: string;
  /**
   * From the outbox re-drive: the attempt was claimed longer ago than any attempt takes, so whoever ran it has
   * died. Only then may a slot its member holds be taken over: a member holding a slot without a job is
   * otherwise an attempt that a live job is running on (or is about to), and queueing it again sends it twice.
   */
  stalled?: boolean;
}

/**
 * The producer side of the `webhooks` queue: one `deliver` job per attempt, carrying ids only, queued once
 * the attempt holds one of its partner's slots (PartnerGate); until then it waits in the gate, not in BullMQ.
 */
@Injectable()
export class WebhookDeliveryQueue {
  constructor(
    @InjectQueue(QUEUES.webhooks) private readonly queue: Queue<WebhookJob>,
    private readonly gate: PartnerGate,
  ) {}

  /** Attempts due now: each partner's go to its gate, and those admitted are queued, in one round trip each. */
  async addNow(due: DueAttempt[]): Promise<void> {
    const byPartner = new Map<string, string[]>();
    for (const d of due) byPartner.set(d.partnerId, [...(byPartner.get(d.partnerId) ?? []), deliveryJobId(d.id, d.attempt)]);
    await Promise.all([...byPartner].map(async ([partnerId, members]) => this.queueAdmitted(partnerId, (await this.gate.admit(partnerId, members)).admitted)));
  }

  /** Attempt n+1 after a retriable failure: a timer that hands it to the gate when it is due. */
  async scheduleRetry({ id: eventId, attempt, partnerId }: DueAttempt, delayMs: number): Promise<void> {
    await this.queue.add(DUE_JOB, { eventId, attempt, partnerId }, { ...DELIVER_OPTIONS, jobId: `${deliveryJobId(eventId, attempt)}-due`, delay: delayMs });
  }

  /**
   * The attempt's slot is free again (it finished, or will never run): the partner's next waiting attempts are
   * admitted into the free slots. With `takeNext`, the first of them is returned for the caller to run at once
   * in the slot it holds now (no job: if its process dies, the outbox re-drive sends it again); the rest are
   * queued.
   */
  async finished(partnerId: string, eventId: string, attempt: number, takeNext = false): Promise<{ eventId: string; attempt: number } | null> {
    const admitted = await this.gate.release(partnerId, deliveryJobId(eventId, attempt));
    const next = takeNext && admitted.length > 0 ? admitted.shift()! : null;
    await this.queueAdmitted(partnerId, admitted);
    return next ? parseJobId(next) : null;
  }

  /** An attempt run on in a slot failed (Postgres away): it becomes a job in that slot, retried with backoff. */
  async retryInSlot(partnerId: string, eventId: string, attempt: number): Promise<void> {
    await this.queueAdmitted(partnerId, [deliveryJobId(eventId, attempt)]);
  }

  /** The attempt's job starts: true when it holds its slot for the run; false when it is back in the gate's line. */
  starting(partnerId: string, eventId: string, attempt: number): Promise<boolean> {
    return this.gate.start(partnerId, deliveryJobId(eventId, attempt));
  }

  /**
   * Makes sure this attempt is queued or waiting in its partner's gate. A job under the same id that already
   * finished without moving the event on (its worker died, or it exhausted BullMQ's retries) is replaced; a
   * waiting, delayed or active one is left alone. A stalled attempt that holds a slot but has no job (its
   * worker died running it) is queued again in that slot (unless its partner holds more slots than its limit,
   * after a seeding: then it waits at the front of the line); one that is not stalled and holds a slot is left to
   * whoever holds it, until the slot's lease runs out. Asking the gate also admits whatever its free slots
   * allow, so slots freed by a worker that died are refilled here. Returns true when the attempt was missing.
   */
  async ensureJob({ id: eventId, attempt, partnerId, stalled }: DueAttempt): Promise<boolean> {
    const jobId = deliveryJobId(eventId, attempt);
    const state = await this.queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    else if (state !== 'unknown') return false;
    const { added, admitted } = stalled ? await this.gate.readmit(partnerId, [jobId]) : await this.gate.admit(partnerId, [jobId]);
    await this.queueAdmitted(partnerId, admitted);
    return added > 0;
  }

  private async queueAdmitted(partnerId: string, members: string[]): Promise<void> {
    if (members.length === 0) return;
    await this.queue.addBulk(
      members.map((jobId) => {
        const { eventId, attempt } = parseJobId(jobId);
        return { name: DELIVER_JOB, data: { eventId, attempt, partnerId, admitted: true }, opts: { ...DELIVER_OPTIONS, jobId } };
      }),
    );
  }
}

function parseJobId(jobId: string): { eventId: string; attempt: number } {
  const cut = jobId.lastIndexOf('-');
  return { eventId: jobId.slice(0, cut), attempt: Number(jobId.slice(cut + 1)) };
}
