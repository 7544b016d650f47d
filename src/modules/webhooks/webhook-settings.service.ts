import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { isForeignKeyViolation } from '../../database/pg-errors';
import { auditUrl, type Actor } from '../audit/audit';
import { AuditService } from '../audit/audit.service';
import { assertWebhookUrlAllowed, assertWebhookUrlText, WebhookUrlRejectedError } from './url-guard';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { SecretUnavailable, WebhookSecrets } from './webhook-secrets';
import { WebhookUpdateLimiter } from './webhook-update-limiter';

/** Spec §6 step 2: 256 random bits, shown as 64 hex characters; the HMAC key is that text (DESIGN §3). */
export function generateWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

/** What a PUT stored; `secret` only when this call generated the partner's first one (shown once). */
export interface WebhookConfigured {
  url: string;
  enabled: boolean;
  enabledAt: Date | null;
  secret?: string;
}

/**
 * A partner's webhook settings (webhook_endpoints): URL, on/off, secret and its rotation. Every change
 * passes the shared per-partner update limit first, then (for a URL) the SSRF guard, and runs in one
 * transaction on the locked row. The admin API and the partner portal both call this service, so both
 * surfaces share the rules and the counter. An unknown partner is found out by the foreign key: 404.
 */
@Injectable()
export class WebhookSettingsService {
  private readonly logger = new Logger('WebhookSettings');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly limiter: WebhookUpdateLimiter,
    private readonly secrets: WebhookSecrets,
    private readonly audit: AuditService,
  ) {}

  /**
   * Sets the URL and the on/off switch. The secret is generated on the first call and shown only in that
   * answer. Switching on stamps enabled_at: events are recorded for delivery from then on only.
   */
  async configure(partnerId: string, input: { url: string; enabled: boolean }, actor: Actor): Promise<WebhookConfigured> {
    await this.limiter.consume(partnerId);
    try {
      if (input.url !== (await this.endpoints.find(partnerId))?.url) assertWebhookUrlText(input.url);
      await assertWebhookUrlAllowed(input.url, { allowPrivate: this.config.webhookAllowPrivateUrls });
    } catch (e) {
      if (e instanceof WebhookUrlRejectedError) throw AppError.invalid([{ field: 'url', message: e.reason }]);
      throw e;
    }
    const candidate = generateWebhookSecret();
    const sealed = this.secrets.seal(partnerId, candidate);
    return this.dataSource.transaction(async (em) => {
      // Of two racing first calls, only the one whose secret was stored shows it: the other waits on the row.
      // Each seal has its own random IV, so the stored value tells which call stored it.
      const current = await this.lockedEndpoint(em, partnerId, sealed);
      const generated = current.secret === null || current.secret === sealed;
      const enabledAt = input.enabled && !current.enabled ? new Date() : current.enabledAt;
      await this.endpoints.update(em, partnerId, { url: input.url, enabled: input.enabled, enabledAt, ...(generated ? { secret: sealed } : {}) });
      // Where payment events go: the trail shows the old and new destination (never the secret; the URL's path
      // only as a digest, its query and user info not at all: any of them may carry the receiver's own token).
      await this.audit.record(em, actor, {
        partnerId, action: 'webhook.updated', targetId: partnerId,
        details: {
          url: { from: auditUrl(current.url), to: auditUrl(input.url) },
          url_changed: current.url !== input.url,
          enabled: { from: current.enabled, to: input.enabled },
          secret_generated: generated,
        },
      });
      return { url: input.url, enabled: input.enabled, enabledAt, ...(generated ? { secret: candidate } : {}) };
    });
  }

  /**
   * A new secret; the one in use stays valid until confirmRotation, and deliveries carry a signature for
   * each. Rotating again before confirming replaces the new secret but keeps the last confirmed one, so
   * the partner's deployed secret keeps verifying throughout.
   */
  async rotate(partnerId: string, actor: Actor): Promise<{ secret: string }> {
    await this.limiter.consume(partnerId);
    const secret = generateWebhookSecret();
    await this.dataSource.transaction(async (em) => {
      const current = await this.lockedEndpoint(em, partnerId, null);
      if (!current.secret) {
        throw new AppError('conflict', { errors: [{ field: 'webhook', message: 'no webhook secret yet: set the webhook first' }] });
      }
      // The confirmed secret keeps signing until confirm-rotation; kept as it is when it does not open here
      // (carryKept), so a rotation never needs the key the old secret was sealed with (it answered 500).
      await this.endpoints.update(em, partnerId, {
        previousSecret: this.secrets.carryKept(partnerId, current.previousSecret ?? current.secret),
        secret: this.secrets.seal(partnerId, secret),
      });
      await this.audit.record(em, actor, {
        partnerId, action: 'webhook.secret_rotated', targetId: partnerId, details: { replaced_pending_rotation: current.previousSecret !== null },
      });
    });
    return { secret };
  }

  /** Retires the old secret: from now on deliveries carry the new signature only. A no-op when none is pending. */
  async confirmRotation(partnerId: string, actor: Actor): Promise<void> {
    await this.limiter.consume(partnerId);
    await this.dataSource.transaction(async (em) => {
      const current = await this.lockedEndpoint(em, partnerId, null);
      if (current.previousSecret !== null) await this.endpoints.update(em, partnerId, { previousSecret: null });
      await this.audit.record(em, actor, {
        partnerId, action: 'webhook.rotation_confirmed', targetId: partnerId, details: { previous_secret_retired: current.previousSecret !== null },
      });
    });
  }

  /**
   * What the partner portal and the admin partner view show: the settings without any secret. A partner
   * without settings (or unknown) has url null and webhooks off.
   */
  async status(partnerId: string): Promise<{ url: string | null; enabled: boolean; enabledAt: Date | null; hasSecret: boolean; rotationPending: boolean }> {
    const row = await this.endpoints.find(partnerId);
    return {
      url: row?.url ?? null,
      enabled: row?.enabled ?? false,
      enabledAt: row?.enabledAt ?? null,
      hasSecret: !!row?.secret,
      rotationPending: !!row?.previousSecret,
    };
  }

  /**
   * URL and the secrets a delivery is signed with now ([current] or, during a rotation, [new, old]), opened;
   * for the portal's test ping. `secrets` is null when a stored one does not open (see SecretUnavailable).
   */
  async signingTarget(partnerId: string): Promise<{ url: string | null; secrets: string[] | null }> {
    const row = await this.endpoints.find(partnerId);
    if (!row) return { url: null, secrets: [] };
    const secrets = await this.secrets.open(partnerId, row).catch((e: Error) => {
      if (!(e instanceof SecretUnavailable)) throw e;
      this.logger.error(e.message);
      return null;
    });
    return { url: row.url, secrets };
  }

  /**
   * The partner's row, created (with `secret`, if given) when missing, and locked for this transaction. An
   * unknown partner fails the foreign key: 404. A row created here by rotate is rolled back with its 409.
   */
  private async lockedEndpoint(em: EntityManager, partnerId: string, secret: string | null): Promise<WebhookEndpointEntity> {
    try {
      await this.endpoints.createIfAbsent(em, partnerId, secret);
    } catch (e) {
      if (isForeignKeyViolation(e)) throw AppError.notFound();
      throw e;
    }
    return (await this.endpoints.lock(em, partnerId))!;
  }
}
