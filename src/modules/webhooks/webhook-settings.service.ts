import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { Db } from '../../database/db';
import { assertWebhookUrlAllowed, WebhookUrlRejectedError } from './url-guard';
import { WebhookUpdateLimiter } from './webhook-update-limiter';

/** Spec §6 step 2: 256 random bits, shown as 64 hex characters; the HMAC key is that text (DESIGN §3). */
export function generateWebhookSecret(): string {
  return randomBytes(32).toString('hex');
}

interface PartnerWebhookRow {
  id: string;
  webhook_secret: string | null;
}

/**
 * A partner's webhook settings: URL, on/off, secret and its rotation. Every change passes the shared
 * per-partner update limit first, then (for a URL) the SSRF guard. The partner portal is meant to call
 * this service too, so both surfaces share the rules and the counter.
 */
@Injectable()
export class WebhookSettingsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: Db,
    private readonly limiter: WebhookUpdateLimiter,
  ) {}

  /**
   * Sets the URL and the on/off switch. The secret is generated on the first call and shown only in that
   * answer. Switching on stamps webhook_enabled_at: events are recorded for delivery from then on only.
   */
  async configure(partnerId: string, input: { url: string; enabled: boolean }): Promise<Record<string, unknown>> {
    await this.load(partnerId);
    await this.limiter.consume(partnerId);
    try {
      await assertWebhookUrlAllowed(input.url, { allowPrivate: this.config.webhookAllowPrivateUrls });
    } catch (e) {
      if (e instanceof WebhookUrlRejectedError) throw AppError.invalid([{ field: 'url', message: e.reason }]);
      throw e;
    }
    const candidate = generateWebhookSecret();
    // COALESCE keeps an existing secret: of two racing first calls, only the one whose secret was stored shows it.
    const [row] = await this.db.query<{ webhook_url: string; webhook_enabled: boolean; webhook_enabled_at: Date | null; generated: boolean }>(
      `UPDATE partners
          SET webhook_url = $2, webhook_enabled = $3,
              webhook_enabled_at = CASE WHEN $3 AND NOT webhook_enabled THEN now() ELSE webhook_enabled_at END,
              webhook_secret = COALESCE(webhook_secret, $4), updated_at = now()
        WHERE id = $1
       RETURNING webhook_url, webhook_enabled, webhook_enabled_at, webhook_secret = $4 AS generated`,
      [partnerId, input.url, input.enabled, candidate],
    );
    return {
      ok: true,
      url: row.webhook_url,
      enabled: row.webhook_enabled,
      enabled_at: row.webhook_enabled_at?.toISOString() ?? null,
      ...(row.generated ? { secret: candidate } : {}),
    };
  }

  /**
   * A new secret; the one in use stays valid until confirmRotation, and deliveries carry a signature for
   * each. Rotating again before confirming replaces the new secret but keeps the last confirmed one, so
   * the partner's deployed secret keeps verifying throughout.
   */
  async rotate(partnerId: string): Promise<Record<string, unknown>> {
    const partner = await this.load(partnerId);
    await this.limiter.consume(partnerId);
    if (!partner.webhook_secret) {
      throw new AppError('conflict', { errors: [{ field: 'webhook', message: 'no webhook secret yet: set the webhook first' }] });
    }
    const secret = generateWebhookSecret();
    await this.db.query(
      `UPDATE partners SET webhook_previous_secret = COALESCE(webhook_previous_secret, webhook_secret),
              webhook_secret = $2, updated_at = now()
        WHERE id = $1`,
      [partnerId, secret],
    );
    return { ok: true, secret };
  }

  /** Retires the old secret: from now on deliveries carry the new signature only. A no-op when none is pending. */
  async confirmRotation(partnerId: string): Promise<Record<string, unknown>> {
    await this.load(partnerId);
    await this.limiter.consume(partnerId);
    await this.db.query(
      `UPDATE partners SET webhook_previous_secret = NULL, updated_at = now() WHERE id = $1 AND webhook_previous_secret IS NOT NULL`,
      [partnerId],
    );
    return { ok: true };
  }

  /** What the partner portal shows: the settings without any secret. */
  async status(partnerId: string): Promise<{ url: string | null; enabled: boolean; enabledAt: Date | null; hasSecret: boolean; rotationPending: boolean }> {
    const [row] = await this.db.query<{ webhook_url: string | null; webhook_enabled: boolean; webhook_enabled_at: Date | null; has_secret: boolean; rotation_pending: boolean }>(
      `SELECT webhook_url, webhook_enabled, webhook_enabled_at, webhook_secret IS NOT NULL AS has_secret,
              webhook_previous_secret IS NOT NULL AS rotation_pending
         FROM partners WHERE id = $1`,
      [partnerId],
    );
    if (!row) throw AppError.notFound();
    return { url: row.webhook_url, enabled: row.webhook_enabled, enabledAt: row.webhook_enabled_at, hasSecret: row.has_secret, rotationPending: row.rotation_pending };
  }

  /** URL and the secrets a delivery is signed with now ([current] or, during a rotation, [new, old]); for the portal's test ping. */
  async signingTarget(partnerId: string): Promise<{ url: string | null; secrets: string[] }> {
    const [row] = await this.db.query<{ webhook_url: string | null; webhook_secret: string | null; webhook_previous_secret: string | null }>(
      `SELECT webhook_url, webhook_secret, webhook_previous_secret FROM partners WHERE id = $1`,
      [partnerId],
    );
    if (!row) throw AppError.notFound();
    const secrets = [row.webhook_secret, row.webhook_previous_secret].filter((s): s is string => !!s);
    return { url: row.webhook_url, secrets };
  }

  private async load(partnerId: string): Promise<PartnerWebhookRow> {
    const [row] = await this.db.query<PartnerWebhookRow>(`SELECT id, webhook_secret FROM partners WHERE id = $1`, [partnerId]);
    if (!row) throw AppError.notFound();
    return row;
  }
}
