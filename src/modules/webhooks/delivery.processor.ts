import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { QUEUES, type WebhookJob } from '../../common/queue/queues';
import { DeliveryService, type SentAttempt } from './delivery.service';
import { DUE_JOB, WebhookDeliveryQueue } from './webhook-delivery.queue';

/** How many of its partner's next attempts one job runs in the slot it holds before handing them to the queue. */
const MAX_RUN_ON = 1000;
/**
 * And for how long: a job that runs on holds one of the worker's 100 places, so partners whose attempts are
 * slow (a hanging endpoint takes WEBHOOK_TIMEOUT_MS each) would keep every place for up to MAX_RUN_ON attempts
 * and starve every other partner's queued attempts. Past this budget the next attempt goes to the back of
 * the queue like any other; a fast partner still runs hundreds of attempts per queue round trip.
 */
const RUN_ON_BUDGET_MS = 1000;

/**
 * The `webhooks` queue. 100 attempts run at once per worker: ten partners' default slots
 * (WEBHOOK_PARTNER_CONCURRENCY), so ten busy partners all run at their limit, and one whose endpoint hangs
 * holds a tenth of the worker (with 50, deliveries to ten partners ran a third slower, on a machine not yet
 * busy: each attempt is a chain of round trips, claim, POST, slot, record with the next claim, and more in flight share
 * each batch). Every `deliver` job already holds one of its partner's WEBHOOK_PARTNER_CONCURRENCY slots
 * (PartnerGate admitted it), so a worker never picks up an attempt it cannot run: a partner whose endpoint hangs holds its slots for at most WEBHOOK_TIMEOUT_MS each,
 * and its other attempts wait in the gate, spending no attempt and no worker time (DESIGN §7). When an
 * attempt ends its slot admits the partner's next one, which the same job runs at once (runNext). A `due`
 * job is a retry's timer: it hands the attempt to the gate. The lock is renewed every 5 s while an attempt
 * runs; a worker that dies leaves a lock that expires within 10 s, and the stalled check (every 5 s) hands
 * the job to another worker, which delivers it again under the same delivery_id; attempts it was running on
 * from the gate are found by the outbox re-drive and queued again in their slots (past the partner's limit,
 * after Redis lost the gate's state, at the front of its line instead).
 */
@Processor(QUEUES.webhooks, { concurrency: 100, lockDuration: 10_000, stalledInterval: 5_000 })
export class DeliveryProcessor extends WorkerHost implements BeforeApplicationShutdown {
  private readonly logger = new Logger('DeliveryProcessor');
  /** Set at shutdown: attempts admitted from then on are queued for another worker, not run here. */
  private stopping = false;

  constructor(
    private readonly delivery: DeliveryService,
    private readonly queue: WebhookDeliveryQueue,
  ) {
    super();
  }

  async process(job: Job<WebhookJob>): Promise<void> {
    const { eventId, attempt } = job.data;
    const partnerId = job.data.partnerId ?? (await this.delivery.partnerOf(eventId));
    // No such event (deleted): the claim would find nothing either.
    if (!partnerId) return;
    if (job.name === DUE_JOB) return this.queue.addNow([{ id: eventId, attempt, partnerId }]);
    // Jobs queued before the gate existed carry no slot: they run as they come.
    if (!job.data.admitted) return this.delivery.attempt(eventId, attempt);
    // Renews the slot for the run; a job whose lease ran out while it waited, with every slot taken since,
    // goes back to the gate's line instead (the limit holds even after the workers were down a long while).
    if (!(await this.queue.starting(partnerId, eventId, attempt))) return;
    const startedAt = Date.now();
    let sent: SentAttempt | null;
    try {
      sent = await this.delivery.send(eventId, attempt);
    } catch (e) {
      // A failure BullMQ will retry keeps the slot for the retry (its lease bounds a worker that died).
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) await this.free(partnerId, eventId, attempt, false);
      throw e;
    }
    await this.runNext(partnerId, { eventId, attempt }, sent, startedAt);
  }

  /**
   * The attempt was sent: its slot goes to the partner's next waiting attempt, and the attempt is recorded as
   * that next one is claimed, in one statement (WebhookEventsRepository.steps: a partner's slots cost one
   * statement per attempt, not two), then the next is sent here at once (a busy partner's slots stay busy
   * without a queue round trip per attempt), up to MAX_RUN_ON attempts per job. The slot is freed before the
   * record: the POST is over, and that is what the partner's limit counts. One that fails here (Postgres
   * away) stops the run-on: the next attempt becomes a job of its own in the slot it holds, retried with
   * BullMQ's backoff, rather than this loop taking and failing every waiting attempt at once; an attempt run
   * on that could not be recorded stays claimed, and the outbox re-drive sends it again once its claim is
   * older than any attempt takes (at least once, under the same delivery_id).
   */
  private async runNext(partnerId: string, first: { eventId: string; attempt: number }, sent: SentAttempt | null, startedAt: number): Promise<void> {
    let current = first;
    let currentSent = sent;
    for (let runs = 0; ; runs++) {
      const runOn = runs < MAX_RUN_ON && Date.now() - startedAt < RUN_ON_BUDGET_MS && !this.stopping;
      let next: { eventId: string; attempt: number } | null;
      if (runs === 0) {
        // The job's own slot: a failure to free it fails the job once its attempt is recorded, and BullMQ's
        // retry finds the attempt recorded (the claim ignores it) and frees the slot then.
        next = await this.queue.finished(partnerId, current.eventId, current.attempt, runOn).catch(async (e: unknown) => {
          if (currentSent) await this.delivery.record(currentSent);
          throw e;
        });
      } else {
        // A slot taken over by the run-on is no longer the job's to retry: its failure is logged, and its lease frees it.
        next = await this.free(partnerId, current.eventId, current.attempt, runOn);
      }
      const [recorded, claimed] = await Promise.allSettled([
        currentSent ? this.delivery.record(currentSent) : null,
        next ? this.delivery.claim(next.eventId, next.attempt) : null,
      ]);
      if (recorded.status === 'rejected') {
        if (next) await this.retryInSlot(partnerId, next, recorded.reason as Error);
        // The job's own attempt: the job fails, and BullMQ's retry claims and sends it again once it holds a slot
        // again (after its last retry, the re-drive sends it once its claim is stale).
        if (runs === 0) throw recorded.reason;
        this.logger.warn(`attempt ${current.attempt} of ${current.eventId} sent but not recorded (${(recorded.reason as Error).message}); the outbox re-drive sends it again`);
        return;
      }
      if (!next) return;
      current = next;
      if (claimed.status === 'rejected') return this.retryInSlot(partnerId, current, claimed.reason as Error);
      try {
        currentSent = claimed.value && (await this.delivery.sendClaimed(claimed.value, current.attempt));
      } catch (e) {
        return this.retryInSlot(partnerId, current, e as Error);
      }
    }
  }

  /** An attempt run on in a slot failed before it was sent: it becomes a job in that slot, retried with backoff. */
  private async retryInSlot(partnerId: string, a: { eventId: string; attempt: number }, why: Error): Promise<void> {
    this.logger.warn(`attempt ${a.attempt} of ${a.eventId} failed (${why.message}); queued to be retried`);
    // If even that fails, its slot's lease runs out and the outbox re-drive sends it again.
    await this.queue.retryInSlot(partnerId, a.eventId, a.attempt).catch((err: Error) => {
      this.logger.warn(`attempt ${a.attempt} of ${a.eventId} not queued (${err.message}); the outbox re-drive sends it again`);
    });
  }

  private async free(partnerId: string, eventId: string, attempt: number, takeNext: boolean): Promise<{ eventId: string; attempt: number } | null> {
    return this.queue.finished(partnerId, eventId, attempt, takeNext).catch((e: Error) => {
      // The slot frees itself when its lease runs out; the re-drive admits the waiting ones then.
      this.logger.warn(`slot of ${eventId}/${attempt} not released: ${e.message}`);
      return null;
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    // Let running attempts finish before the poster closes its keep-alive sockets (at application shutdown).
    await this.worker.close();
  }
}
