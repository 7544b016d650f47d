import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { fiatExponent } from '../../../common/currencies';
import { AppError } from '../../../common/errors';
import { currencyMismatch } from '../../../common/http/currency-assertion';
import type { Principal } from '../../auth/api-key';
import { ApiKeyService } from '../../auth/api-key.service';
import { AssetRegistry } from '../../chain/asset-registry';
import { MerchantDirectory, type MerchantForCreate } from '../../merchants/merchant-directory';
import { MerchantGate } from '../../merchants/merchant-gate.service';
import { RatesService } from '../../rates/rates.service';
import { fiatToTokenAmount } from '../domain/amount';
import type { PaymentRequest, RequestSource } from '../domain/payment-request';
import { internalIdempotencyKey, SERVICE_MODE_DEFAULT_EXPIRY_MINUTES, type PaymentMode } from '../domain/request-rules';
import type { ProofStatus, RequestStatus } from '../domain/transitions';
import { KeyRevoked, RequestsRepository, type ListFilter, type NewRequest } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';
import { ExpiryService } from './expiry.service';

const PAGE_DEFAULT = 50;

export interface RequestPage {
  items: PaymentRequest[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/**
 * Who a request is created for: the partner and mode it belongs to, with the partner's expiry settings. The
 * partner API passes its key's principal, whose keyId makes the insert fail once the key is revoked; the
 * dashboard, the handle page and plan charges pass the merchant's partner, without a key.
 */
export type RequestCreator = Pick<Principal, 'partnerId' | 'mode' | 'allowedExpiryMinutes' | 'defaultExpiryMinutes'> & { keyId?: string };

/** One create, whoever asks (partner API, dashboard, handle page, plan charge): one path, one set of rules. */
export interface CreateRequestInput {
  merchantId: string;
  fiatAmount: number;
  /** An assertion of the merchant's currency (spec §4.1), never an override. */
  fiatCurrencyCode?: string;
  memo?: string;
  /** Scoped to (partner, merchant): the same key returns the existing request (spec §4.1). */
  idempotencyKey?: string;
  /** null for dashboard and handle requests (spec §6.3). */
  metadata: Record<string, string> | null;
  paymentMode: PaymentMode;
  customerName?: string;
  customerEmail?: string;
  customerPhone?: string;
  expiryMinutes?: number;
  source: RequestSource;
  planId?: string;
  periodIndex?: number;
}

/** Whose requests a read or cancel may touch: a partner's in one mode, optionally one merchant's only. */
export interface RequestScope {
  partnerId: string;
  testMode: boolean;
  merchantId?: string;
}

export function partnerScope(p: Pick<Principal, 'partnerId' | 'mode'>): RequestScope {
  return { partnerId: p.partnerId, testMode: p.mode === 'test' };
}

/** A list's filters (spec §4.3, plus the dashboard's source and plan) and its page. */
export interface RequestListQuery {
  status?: RequestStatus;
  proofStatus?: ProofStatus;
  merchantId?: string;
  source?: RequestSource;
  planId?: string;
  since?: string;
  until?: string;
  limit?: number;
  offset?: number;
}

/** How many rows one batch of an unpaged export reads. */
const EXPORT_BATCH = 500;

/** The use cases on payment requests (spec §4.1–4.4), for the partner API and the merchant's dashboard. */
@Injectable()
export class RequestsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: RequestsRepository,
    private readonly assets: AssetRegistry,
    private readonly rates: RatesService,
    private readonly afterCommit: AfterCommit,
    private readonly merchants: MerchantGate,
    private readonly directory: MerchantDirectory,
    private readonly expiry: ExpiryService,
    private readonly keys: ApiKeyService,
  ) {}

  /**
   * DESIGN §3 order: ownership (404) and mode, idempotent replay, then onboarding, disabled, currency, expiry.
   * Decided on the cached merchant (a round trip saved on the hottest path); the schema's
   * payment_requests_merchant_holds rule refuses the row when the merchant changed since, and then the
   * decision is made again on a fresh read, so a stale cache can never create a request.
   */
  async create(p: RequestCreator, input: CreateRequestInput): Promise<{ request: PaymentRequest; created: boolean }> {
    const outcome = await this.attempt(p, input, await this.directory.forCreate(input.merchantId));
    if (outcome) return this.queued(outcome);
    for (let fresh = 0; fresh < 2; fresh++) {
      this.directory.evict(input.merchantId);
      const again = await this.attempt(p, input, await this.merchants.currentForCreate(input.merchantId));
      if (again) return this.queued(again);
    }
    throw new Error(`merchant ${input.merchantId} kept changing while a request was created for it`);
  }

  /**
   * The same create, inside the caller's transaction (a plan's charge and its plan's advance commit together).
   * Decided on a fresh read of the merchant; when the schema's merchant rule refuses the row (the merchant
   * changed between that read and the insert, which then undid only itself), decided again on a new read, so a
   * merchant disabled meanwhile gets its 400, not a broken transaction. Nothing is queued: after the commit,
   * call `created()`.
   */
  async createIn(em: EntityManager, p: RequestCreator, input: CreateRequestInput): Promise<{ request: PaymentRequest; created: boolean }> {
    for (let read = 0; read < 3; read++) {
      const outcome = await this.attempt(p, input, await this.merchants.currentForCreate(input.merchantId, em), em);
      if (outcome) return outcome;
    }
    throw new Error(`merchant ${input.merchantId} kept changing while a request was created for it`);
  }

  /** Work queued once a request's insert committed: its expiry job (the sweep backs it up). */
  async created(request: PaymentRequest): Promise<void> {
    await this.afterCommit.requestCreated(request.expiresAt);
  }

  private queued(outcome: { request: PaymentRequest; created: boolean }): { request: PaymentRequest; created: boolean } {
    if (outcome.created) void this.created(outcome.request);
    return outcome;
  }

  /** One decision and insert on merchant `m` as read; null when the schema says `m` is no longer current. */
  private async attempt(
    p: RequestCreator,
    dto: CreateRequestInput,
    m: MerchantForCreate | null,
    em?: EntityManager,
  ): Promise<{ request: PaymentRequest; created: boolean } | null> {
    if (!m || m.partner_id !== p.partnerId) throw AppError.notFound();
    if (m.test_mode !== (p.mode === 'test')) throw new AppError('merchant_mode_mismatch');
    const mode = dto.paymentMode;
    const asset = this.assets.asset(p.mode);
    const rate = this.rates.rate(m.display_currency);
    const problem =
      this.refusal(p, m, dto) ??
      (!asset
        ? new AppError('asset_unavailable')
        : !rate
          ? new AppError('unsupported_currency', { expected_fiat_code: m.display_currency })
          : this.rates.tooOld(m.display_currency));
    if (problem || !asset || !rate) {
      // An idempotent replay wins over every later check (DESIGN's order): look for one only now.
      const existing = dto.idempotencyKey ? await this.repo.findByKey(p.partnerId, m.id, dto.idempotencyKey, em) : null;
      if (existing) return { request: existing, created: false };
      if (problem?.code === 'rate_source_unavailable') this.rates.refusing(m.display_currency);
      throw problem;
    }
    const expiry = dto.expiryMinutes ?? (mode === 'service' ? SERVICE_MODE_DEFAULT_EXPIRY_MINUTES : p.defaultExpiryMinutes);
    const n: NewRequest = {
      id: randomUUID(),
      partnerId: p.partnerId,
      merchantId: m.id,
      testMode: m.test_mode,
      idempotencyKey: dto.idempotencyKey ?? internalIdempotencyKey(randomUUID()),
      fiatAmount: dto.fiatAmount,
      fiatCurrency: m.display_currency,
      rate,
      baseAmount: fiatToTokenAmount(dto.fiatAmount, fiatExponent(m.display_currency), asset.decimals, rate),
      chainId: asset.chainId,
      tokenAddress: asset.token,
      recipient: m.wallet_address!,
      memo: dto.memo ?? null,
      paymentMode: mode,
      customerName: dto.customerName ?? null,
      customerEmail: dto.customerEmail ?? null,
      customerPhone: dto.customerPhone ?? null,
      metadata: dto.metadata,
      source: dto.source,
      planId: dto.planId ?? null,
      periodIndex: dto.periodIndex ?? null,
      apiKeyId: p.keyId ?? null,
      expiryMinutes: expiry,
      graceMinutes: this.config.latePaymentGraceMinutes,
    };
    return this.repo.insertOrFind(n, em).catch((e: unknown) => {
      // Answered as the guard answers a revoked key: the call acts no more than a call made after the revocation.
      if (e instanceof KeyRevoked) throw new AppError('unauthorized');
      throw e;
    });
  }

  /**
   * The checks after the replay, in DESIGN's order: onboarding, disabled, currency, expiry (then, in attempt,
   * the mode's asset and the currency's rate: none, or one too old to price).
   */
  private refusal(p: RequestCreator, m: MerchantForCreate, dto: CreateRequestInput): AppError | null {
    if (m.onboarding_status !== 'complete' || !m.wallet_address) return new AppError('merchant_onboarding_incomplete');
    if (m.disabled) return new AppError('merchant_disabled');
    const mismatch = currencyMismatch(dto.fiatCurrencyCode, m.display_currency);
    if (mismatch) return mismatch;
    if (dto.expiryMinutes !== undefined && !p.allowedExpiryMinutes.includes(dto.expiryMinutes)) {
      return new AppError('invalid_expiry_minutes', { allowed_expiry_minutes: p.allowedExpiryMinutes });
    }
    return null;
  }

  async get(scope: RequestScope, id: string): Promise<PaymentRequest> {
    const r = await this.repo.findOwned(scope.partnerId, scope.testMode, id);
    if (!r || (scope.merchantId !== undefined && r.merchantId !== scope.merchantId)) throw AppError.notFound();
    return r;
  }

  async list(scope: RequestScope, q: RequestListQuery): Promise<RequestPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const { items, hasMore } = await this.repo.list({ ...this.filter(scope, q), limit, offset });
    return { items, hasMore, limit, offset };
  }

  /**
   * Every request of the list's filters, oldest first, with no page limit: read in batches by keyset
   * (created_at, id), so an export of any size holds one batch in memory and never skips or repeats a row.
   */
  async *exportAll(scope: RequestScope, q: RequestListQuery): AsyncGenerator<PaymentRequest[]> {
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      const { items, hasMore } = await this.repo.list({ ...this.filter(scope, q), after, limit: EXPORT_BATCH, offset: 0 });
      if (items.length > 0) yield items;
      if (!hasMore) return;
      const last = items[items.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
  }

  private filter(scope: RequestScope, q: RequestListQuery): Omit<ListFilter, 'limit' | 'offset'> {
    return {
      partnerId: scope.partnerId,
      testMode: scope.testMode,
      status: q.status,
      proofStatus: q.proofStatus,
      merchantId: scope.merchantId ?? q.merchantId,
      source: q.source,
      planId: q.planId,
      since: q.since,
      until: q.until,
    };
  }

  /** A plan's charges, oldest first (the plans module's detail and payer page); in em's transaction when given. */
  chargesOf(planId: string, em?: EntityManager): Promise<PaymentRequest[]> {
    return this.repo.chargesOf(planId, em);
  }

  /**
   * The test clock's expiry of an unpaid charge, in the caller's transaction: expires_at becomes now
   * (DESIGN §8). Null when the request was not open and unpaid.
   */
  expireNow(em: EntityManager, id: string): Promise<PaymentRequest | null> {
    return this.repo.expireEarly(em, id);
  }

  /** The period of the plan's latest paid charge, or null (DESIGN §5; see PlanChargeOutcomesPort.chargesLapsed). */
  latestPaidPeriod(em: EntityManager, planId: string): Promise<number | null> {
    return this.repo.latestPaidPeriod(em, planId);
  }

  /** A plan's charges past their deadline whose expiry is not stored yet (jobs late): stored now, misses counted. */
  expireLapsedCharges(em: EntityManager, planId: string): Promise<number> {
    return this.expiry.expireLapsedCharges(em, planId);
  }

  /**
   * Spec §4.4: only requested with proof none; otherwise CannotCancel with the current request, which each
   * surface shows beside the error in its own shape (cannotCancelWith). A partner's cancel names its key
   * (`keyId`): the request is voided only while that key is live (else 401).
   */
  async cancel(scope: RequestScope, id: string, keyId?: string): Promise<PaymentRequest> {
    const voiding = (em?: EntityManager) => this.repo.applyStatus(id, 'cancel', { scope, em });
    const voided = keyId ? await this.keys.whileLive(keyId, voiding) : await voiding();
    if (voided) return voided;
    throw new CannotCancel(await this.get(scope, id));
  }
}

/** The 409 of spec §4.4, carrying the request as it is now. */
export class CannotCancel extends AppError {
  constructor(readonly request: PaymentRequest) {
    super('cannot_cancel');
  }
}

/**
 * For a cancel's rejection: CannotCancel becomes the 409 with the caller's view of the request beside the
 * error (the partner's object, the dashboard's item); any other error passes unchanged.
 */
export function cannotCancelWith(view: (r: PaymentRequest) => Record<string, unknown>): (e: unknown) => never {
  return (e) => {
    if (e instanceof CannotCancel) throw new AppError('cannot_cancel', { ...view(e.request), ok: false, error: 'cannot_cancel' });
    throw e;
  };
}
