import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { nextStep, type NextStep } from './delivery-policy';
import { webhookBody, webhookHeaders, type DeliverySource } from './payload';
import { WebhookEventsRepository, type ClaimedEvent } from './webhook-events.repository';
import { WebhookPoster, type PostOutcome } from './webhook-poster';
import { WebhookRelay } from './webhook-relay';

/**
 * One delivery attempt (spec §6): claim it, build the body from the stored event and request, sign it with
 * a fresh t, POST it, store the attempt and the outcome, and schedule the next attempt as a new delayed job.
 */
@Injectable()
export class DeliveryService {
  private readonly logger = new Logger('WebhookDelivery');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: WebhookEventsRepository,
    private readonly poster: WebhookPoster,
    private readonly relay: WebhookRelay,
  ) {}

  async attempt(eventId: string, attempt: number): Promise<void> {
    const ev = await this.events.claim(eventId, attempt);
    if (!ev) {
      // A stale or duplicate job, or an event not meant for delivery: nothing to do.
      this.logger.debug(`attempt ${attempt} of ${eventId} not due; job ignored`);
      return;
    }
    const startedAt = new Date();
    let step: NextStep;
    let post: Omit<PostOutcome, 'errorClass'> & { errorClass: string | null };
    if (!ev.webhook_enabled || !ev.webhook_url || !ev.webhook_secret) {
      // Switched off after the event was recorded: the partner asked for no more deliveries.
      post = { statusCode: null, durationMs: 0, errorClass: 'webhook_disabled', errorMessage: 'webhooks are disabled for this partner' };
      step = { outcome: 'abandoned' };
    } else {
      const source = toSource(ev);
      const body = webhookBody(source);
      const secrets = ev.webhook_previous_secret ? [ev.webhook_secret, ev.webhook_previous_secret] : [ev.webhook_secret];
      const outcome = await this.poster.post(ev.webhook_url, body, webhookHeaders(source, body, secrets, Math.floor(Date.now() / 1000)));
      post = outcome;
      step = nextStep(outcome, attempt - ev.series_base, {
        delaysMs: this.config.webhookRetryDelaysMs,
        maxAttempts: this.config.webhookMaxAttempts,
      });
    }
    const delayMs = step.outcome === 'retry' ? step.delayMs : 0;
    const recorded = await this.events.record({ eventId, attempt, startedAt, post, outcome: step.outcome, delayMs });
    // Only the run that recorded the attempt schedules the next one; a duplicate run stops here.
    if (recorded && step.outcome === 'retry') await this.relay.scheduleRetry(eventId, attempt + 1, delayMs);
  }
}

function toSource(ev: ClaimedEvent): DeliverySource {
  return {
    eventId: ev.id,
    event: ev.event,
    partnerId: ev.partner_id,
    requestId: ev.request_id,
    merchantId: ev.merchant_id,
    proofStatus: ev.proof_status,
    proofSource: ev.proof_source,
    txHash: ev.tx_hash,
    payerAddress: ev.payer_address,
    metadata: ev.metadata,
    recordedAt: ev.recorded_at,
    testMode: ev.test_mode,
  };
}
