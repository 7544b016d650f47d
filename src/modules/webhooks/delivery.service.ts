import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MetricsService } from '../ops/metrics.service';
import { nextStep, type NextStep } from './delivery-policy';
import { webhookBody, webhookHeaders, type DeliverySource } from './payload';
import type { RequestFacts } from './request-facts.port';
import { WebhookDeliveryQueue } from './webhook-delivery.queue';
import { WebhookEventsRepository, type AttemptRecord, type ClaimedEvent } from './webhook-events.repository';
import { WebhookPoster, type PostOutcome } from './webhook-poster';
import { SecretUnavailable, WebhookSecrets } from './webhook-secrets';

/** An attempt that was sent (or found switched off), to be recorded. */
export interface SentAttempt {
  record: AttemptRecord;
  partnerId: string;
}

/**
 * One delivery attempt (spec §6): claim it, build the body from the stored event and request, sign it with
 * a fresh t, POST it, store the attempt and the outcome, and schedule the next attempt as a new delayed job.
 * In steps for DeliveryProcessor, which records an attempt as it claims the partner's next one in the same
 * slot (one statement: WebhookEventsRepository.steps); attempt() runs all of them.
 */
@Injectable()
export class DeliveryService {
  private readonly logger = new Logger('WebhookDelivery');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: WebhookEventsRepository,
    private readonly poster: WebhookPoster,
    private readonly queue: WebhookDeliveryQueue,
    private readonly secrets: WebhookSecrets,
    private readonly metrics: MetricsService,
  ) {}

  /** The event's partner, for jobs queued before their data carried it; null for an unknown event. */
  async partnerOf(eventId: string): Promise<string | null> {
    return (await this.events.get(eventId))?.partnerId ?? null;
  }

  async attempt(eventId: string, attempt: number): Promise<void> {
    const sent = await this.send(eventId, attempt);
    if (sent) await this.record(sent);
  }

  /** Claims attempt n and sends it; null when it is not due (nothing to do, nothing to record). */
  async send(eventId: string, attempt: number): Promise<SentAttempt | null> {
    const ev = await this.claim(eventId, attempt);
    return ev && this.sendClaimed(ev, attempt);
  }

  /** Takes attempt n (see WebhookEventsRepository.claimMany); null for a stale or duplicate job. */
  async claim(eventId: string, attempt: number): Promise<ClaimedEvent | null> {
    const ev = await this.events.claim({ eventId, attempt });
    // A stale or duplicate job, or an event not meant for delivery: nothing to do.
    if (!ev) this.logger.debug(`attempt ${attempt} of ${eventId} not due; job ignored`);
    return ev;
  }

  /** POSTs a claimed attempt (or finds the endpoint switched off); the attempt is then for record(). */
  async sendClaimed(ev: ClaimedEvent, attempt: number): Promise<SentAttempt> {
    const startedAt = new Date();
    let step: NextStep;
    let post: Omit<PostOutcome, 'errorClass'> & { errorClass: string | null };
    const { url, enabled, secret } = ev.endpoint;
    if (!enabled || !url || !secret) {
      // Switched off after the event was recorded: the partner asked for no more deliveries.
      post = { statusCode: null, durationMs: 0, errorClass: 'webhook_disabled', errorMessage: 'webhooks are disabled for this partner' };
      step = { outcome: 'abandoned' };
    } else {
      // The outbox row references its request (foreign key), so this is a failure of the read: BullMQ retries.
      if (!ev.request) throw new Error(`request ${ev.requestId} of delivery ${ev.id} not found`);
      const source = toSource(ev, ev.request);
      const body = webhookBody(source);
      const secrets = await this.openSecrets(ev);
      const outcome = await this.poster.post(url, body, webhookHeaders(source, body, secrets, Math.floor(Date.now() / 1000)));
      post = outcome;
      step = nextStep(outcome, attempt - ev.seriesBase, {
        delaysMs: this.config.webhookRetryDelaysMs,
        maxAttempts: this.config.webhookMaxAttempts,
      });
    }
    const delayMs = step.outcome === 'retry' ? step.delayMs : 0;
    return { record: { eventId: ev.id, attempt, startedAt, post, outcome: step.outcome, delayMs }, partnerId: ev.partnerId };
  }

  /** Stores a sent attempt and its outcome, and schedules the next attempt after a retriable failure. */
  async record({ record: r, partnerId }: SentAttempt): Promise<void> {
    const recorded = await this.events.record(r);
    if (recorded) this.metrics.countWebhookAttempt(r.outcome);
    // Only the run that recorded the attempt schedules the next one; a duplicate run stops here. The attempt is
    // recorded either way: a timer that could not be set (Redis away) is not a failure of the record, and the
    // outbox re-drive queues the next attempt once it is overdue (its next_attempt_at is stored).
    if (recorded && r.outcome === 'retry') {
      await this.queue.scheduleRetry({ id: r.eventId, attempt: r.attempt + 1, partnerId }, r.delayMs).catch((e: Error) => {
        this.logger.warn(`retry timer of ${r.eventId}/${r.attempt + 1} not set (${e.message}); the outbox re-drive queues it when due`);
      });
    }
  }

  /**
   * The partner's secrets in the clear. A stored value that does not open fails the job, and nothing is signed:
   * not with a wrong key, and not with the other secret alone, which the partner may not have deployed (an
   * instance still on the old SECRET_KEY during a key rotation cannot open a value already sealed under the
   * new one: another instance delivers it). BullMQ retries the job and the outbox re-drive keeps it queued, so
   * nothing is lost: it goes out once the key is configured, or once a rotation confirmed has replaced the
   * secret (docs/operations.md).
   */
  private async openSecrets(ev: ClaimedEvent): Promise<string[]> {
    try {
      return await this.secrets.open(ev.partnerId, ev.endpoint);
    } catch (e) {
      if (e instanceof SecretUnavailable) {
        this.metrics.countWebhookSecretUnavailable();
        this.logger.error(`delivery ${ev.id}: ${e.message}; nothing sent, retried`);
      }
      throw e;
    }
  }
}

function toSource(ev: ClaimedEvent, r: RequestFacts): DeliverySource {
  return {
    eventId: ev.id,
    event: ev.event,
    partnerId: ev.partnerId,
    requestId: ev.requestId,
    merchantId: r.merchantId,
    proofStatus: r.proofStatus,
    proofSource: r.proofSource,
    txHash: r.txHash,
    payerAddress: r.payerAddress,
    metadata: r.metadata,
    recordedAt: ev.recordedAt,
    testMode: ev.testMode,
  };
}
