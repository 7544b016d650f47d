import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { signWebhook } from '../../../sdk/webhook-verify/src/index';
import type { Mode } from '../../config/config';
import { AppError, type ErrorCode, type FieldError } from '../../common/errors';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import type { ApiKeyInfo, IssuedKey } from '../auth/api-key';
import type { Actor } from '../audit/audit';
import { AuditService, type AuditPage } from '../audit/audit.service';
import { ApiKeyService } from '../auth/api-key.service';
import { SCOPES } from '../auth/scopes';
import type { Merchant } from '../merchants/merchant';
import { MerchantsService } from '../merchants/merchants.service';
import { RatesService, type RateRow } from '../rates/rates.service';
import { DeliveriesService } from '../webhooks/deliveries.service';
import { WEBHOOK_USER_AGENT } from '../webhooks/payload';
import { WebhookPoster, type PostOutcome } from '../webhooks/webhook-poster';
import { WebhookSettingsService } from '../webhooks/webhook-settings.service';
import type { PortalSession } from './portal-sessions.service';
import { PortalUsersService, type PortalUserInfo } from './portal-users.service';

/** A refusal the portal shows in words on the page the form came from (the rest goes to the error page). */
export interface Refusal {
  status: number;
  code: ErrorCode;
  errors: FieldError[];
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

/** Runs fn; the listed error codes come back as a refusal instead of an exception. */
async function refusable<T>(codes: ErrorCode[], fn: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    if (e instanceof AppError && codes.includes(e.code)) {
      const errors = Array.isArray(e.extra.errors) ? (e.extra.errors as FieldError[]) : [];
      return { ok: false, refusal: { status: e.status, code: e.code, errors } };
    }
    throw e;
  }
}

function refused(code: ErrorCode, errors: FieldError[] = []): { ok: false; refusal: Refusal } {
  return { ok: false, refusal: { status: new AppError(code).status, code, errors } };
}

export interface DeliveryView {
  delivery_id: string;
  request_id: string;
  event: string;
  test_mode: boolean;
  state: string;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  delivered_at: string | null;
  recorded_at: string;
}

export interface AttemptView {
  attempt: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  outcome: string;
}

export interface PingResult {
  url: string;
  deliveryId: string;
  outcome: PostOutcome;
}

/** The signed-in user making a change: every change below is recorded in the audit trail as theirs. */
export type PortalActor = Extract<Actor, { kind: 'portal_user' }>;

export const PAGE_SIZE = 25;
/** Test pings per partner and minute: enough to debug a receiver, too few to use the portal as a load generator. */
export const PINGS_PER_MINUTE = 10;
const LABEL_MAX = 100;

/**
 * What a signed-in partner user can see and do. Every call is scoped to the session's partner, and every
 * change goes through the service operators use (keys, webhook settings, deliveries, rates), so the rules
 * and the shared limits of spec §8 are the same whichever surface makes the change.
 */
@Injectable()
export class PortalService {
  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly merchants: MerchantsService,
    private readonly rates: RatesService,
    private readonly webhooks: WebhookSettingsService,
    private readonly deliveries: DeliveriesService,
    private readonly limiter: PartnerLimiter,
    private readonly poster: WebhookPoster,
    private readonly users: PortalUsersService,
    private readonly audit: AuditService,
  ) {}

  // ---- API keys

  keys(partnerId: string): Promise<ApiKeyInfo[]> {
    return this.apiKeys.list(partnerId);
  }

  async createKey(a: PortalActor, input: { mode?: string; scopes: string[]; label?: string }): Promise<Outcome<IssuedKey>> {
    const errors: FieldError[] = [];
    if (input.mode !== 'test' && input.mode !== 'live') errors.push({ field: 'mode', message: 'Choose test or live.' });
    const scopes = SCOPES.filter((s) => input.scopes.includes(s));
    if (scopes.length === 0 || scopes.length !== new Set(input.scopes).size) {
      errors.push({ field: 'scopes', message: 'Choose at least one of the listed scopes.' });
    }
    const label = input.label?.trim() || undefined;
    if (label && [...label].length > LABEL_MAX) errors.push({ field: 'label', message: `At most ${LABEL_MAX} characters.` });
    if (errors.length) return refused('invalid_request', errors);
    return { ok: true, value: await this.apiKeys.issue(a.partnerId, { mode: input.mode as Mode, scopes, label }, a) };
  }

  async revokeKey(a: PortalActor, keyId: string): Promise<void> {
    await this.apiKeys.revoke(a.partnerId, keyId, a);
  }

  // ---- Webhook settings (the update limit of §8 is WebhookSettingsService's, shared with the admin API)

  webhookStatus(partnerId: string) {
    return this.webhooks.status(partnerId);
  }

  /** Saves URL and switch; `secret` is set when this save generated the partner's first secret. */
  configureWebhook(a: PortalActor, input: { url: string; enabled: boolean }): Promise<Outcome<{ secret?: string }>> {
    if (input.url.trim() === '') return Promise.resolve(refused('invalid_request', [{ field: 'url', message: 'Enter the URL that receives the events.' }]));
    return refusable(['invalid_request', 'rate_limited'], async () => {
      const r = await this.webhooks.configure(a.partnerId, { url: input.url.trim(), enabled: input.enabled }, a);
      return { secret: typeof r.secret === 'string' ? r.secret : undefined };
    });
  }

  rotateSecret(a: PortalActor): Promise<Outcome<string>> {
    return refusable(['conflict', 'rate_limited'], async () => (await this.webhooks.rotate(a.partnerId, a)).secret as string);
  }

  confirmRotation(a: PortalActor): Promise<Outcome<void>> {
    return refusable(['rate_limited'], async () => {
      await this.webhooks.confirmRotation(a.partnerId, a);
    });
  }

  /**
   * "Send a test event": spec §6.1 says no event kinds exist beyond the two payment events, so the test is
   * not an event. It is a `ping` POSTed now, signed like a delivery with the current secret(s), and nothing
   * is recorded in the outbox or the delivery log; the receiver's answer is shown at once.
   */
  async ping(partnerId: string): Promise<Outcome<PingResult>> {
    const limited = await refusable(['rate_limited'], () => this.limiter.consume('webhook-ping', partnerId, PINGS_PER_MINUTE));
    if (!limited.ok) return limited;
    const target = await this.webhooks.signingTarget(partnerId);
    if (!target.secrets) {
      return refused('conflict', [{ field: 'url', message: 'A webhook secret cannot be read on our side: rotate the secret, put the new one in place and confirm the rotation, then test again.' }]);
    }
    if (!target.url || target.secrets.length === 0) {
      return refused('conflict', [{ field: 'url', message: 'Save a webhook URL first: the test is signed with its secret.' }]);
    }
    const deliveryId = randomUUID();
    const body = JSON.stringify({ event: 'ping', delivery_id: deliveryId, partner_id: partnerId, timestamp: new Date().toISOString() });
    const outcome = await this.poster.post(target.url, body, {
      'content-type': 'application/json',
      'x-service-signature': signWebhook(body, target.secrets, Math.floor(Date.now() / 1000)),
      'x-service-event': 'ping',
      'x-service-delivery': deliveryId,
      'user-agent': WEBHOOK_USER_AGENT,
    });
    return { ok: true, value: { url: target.url, deliveryId, outcome } };
  }

  // ---- Deliveries

  async deliveriesPage(partnerId: string, offset: number): Promise<{ deliveries: DeliveryView[]; hasMore: boolean }> {
    const r = await this.deliveries.list({ partner_id: partnerId, limit: PAGE_SIZE, offset });
    return { deliveries: r.deliveries as DeliveryView[], hasMore: r.has_more as boolean };
  }

  /** One of this partner's deliveries with its attempts; another partner's is the same 404 as a missing one. */
  async delivery(partnerId: string, deliveryId: string): Promise<{ delivery: DeliveryView; attempts: AttemptView[] }> {
    const d = await this.deliveries.get(deliveryId);
    if (d.partner_id !== partnerId) throw AppError.notFound();
    return { delivery: d as unknown as DeliveryView, attempts: d.attempt_log as AttemptView[] };
  }

  async redeliver(a: PortalActor, deliveryId: string): Promise<Outcome<void>> {
    await this.delivery(a.partnerId, deliveryId);
    return refusable(['conflict'], async () => {
      await this.deliveries.redeliver(deliveryId, a);
    });
  }

  // ---- Rates

  currentRates(): RateRow[] {
    return this.rates.list();
  }

  /** A manual refresh: the same per-partner counter as the admin endpoint (one per minute, spec §8). */
  refreshRates(a: PortalActor): Promise<Outcome<RateRow[]>> {
    return refusable(['rate_limited', 'rate_source_unavailable'], async () => {
      await this.limiter.consume('rates-refresh', a.partnerId, 1);
      return this.rates.refresh({ actor: a, partnerId: a.partnerId });
    });
  }

  // ---- Merchants

  async merchantsPage(partnerId: string, mode: Mode, offset: number): Promise<{ merchants: Merchant[]; hasMore: boolean }> {
    const r = await this.merchants.list({ partnerId, mode }, { limit: PAGE_SIZE, offset });
    return { merchants: r.merchants, hasMore: r.hasMore };
  }

  // ---- Your account and users (user management is for the partner's admins: PortalController checks the role)

  changePassword(s: PortalSession, a: PortalActor, input: { current?: string; next?: string; repeat?: string }): Promise<Outcome<void>> {
    return refusable(['invalid_request', 'rate_limited'], async () => {
      await this.users.changePassword(s.userId, s.sessionId, input, a);
    });
  }

  usersOf(partnerId: string): Promise<PortalUserInfo[]> {
    return this.users.list(partnerId);
  }

  invite(a: PortalActor, input: { email?: string; password?: string; role?: string }): Promise<Outcome<PortalUserInfo>> {
    return refusable(['invalid_request', 'conflict'], () => this.users.create(a.partnerId, input, a));
  }

  removeUser(a: PortalActor, userId: string): Promise<Outcome<void>> {
    return refusable(['conflict'], () => this.users.remove(a.partnerId, userId, a));
  }

  setRole(a: PortalActor, userId: string, role: string | undefined): Promise<Outcome<void>> {
    return refusable(['invalid_request', 'conflict'], () => this.users.setRole(a.partnerId, userId, role, a));
  }

  // ---- Audit trail (admins only, like Users: it names the partner's users)

  auditPage(partnerId: string, offset: number): Promise<AuditPage> {
    return this.audit.list({ partnerId, limit: PAGE_SIZE, offset });
  }
}
