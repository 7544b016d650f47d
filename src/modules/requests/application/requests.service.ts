import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { fiatExponent, normalizeCurrency } from '../../../common/currencies';
import { AppError } from '../../../common/errors';
import type { Principal } from '../../auth/api-key';
import { AssetRegistry } from '../../chain/asset-registry';
import { MerchantDirectory, type MerchantForCreate } from '../../merchants/merchant-directory';
import { MerchantGate } from '../../merchants/merchant-gate.service';
import { RatesService } from '../../rates/rates.service';
import { fiatToTokenAmount } from '../domain/amount';
import type { PaymentRequest } from '../domain/payment-request';
import { internalIdempotencyKey, SERVICE_MODE_DEFAULT_EXPIRY_MINUTES } from '../domain/request-rules';
import type { CreateRequestDto, ListRequestsQuery } from '../http/request.dto';
import { toRequestResponse } from '../http/request.mapper';
import { RequestsRepository, type NewRequest } from '../infrastructure/requests.repository';
import { AfterCommit } from './after-commit';

const PAGE_DEFAULT = 50;

export interface RequestPage {
  items: PaymentRequest[];
  hasMore: boolean;
  limit: number;
  offset: number;
}

/** The partner API's use cases on payment requests (spec §4.1–4.4). */
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
  ) {}

  /**
   * DESIGN §3 order: ownership (404) and mode, idempotent replay, then onboarding, disabled, currency, expiry.
   * Decided on the cached merchant (a round trip saved on the hottest path); the schema's
   * payment_requests_merchant_holds rule refuses the row when the merchant changed since, and then the
   * decision is made again on a fresh read, so a stale cache can never create a request.
   */
  async create(p: Principal, dto: CreateRequestDto): Promise<{ request: PaymentRequest; created: boolean }> {
    const outcome = await this.attempt(p, dto, await this.directory.forCreate(dto.account_id));
    if (outcome) return outcome;
    for (let fresh = 0; fresh < 2; fresh++) {
      this.directory.evict(dto.account_id);
      const again = await this.attempt(p, dto, await this.merchants.currentForCreate(dto.account_id));
      if (again) return again;
    }
    throw new Error(`merchant ${dto.account_id} kept changing while a request was created for it`);
  }

  /** One decision and insert on merchant `m` as read; null when the schema says `m` is no longer current. */
  private async attempt(p: Principal, dto: CreateRequestDto, m: MerchantForCreate | null): Promise<{ request: PaymentRequest; created: boolean } | null> {
    if (!m || m.partner_id !== p.partnerId) throw AppError.notFound();
    if (m.test_mode !== (p.mode === 'test')) throw new AppError('merchant_mode_mismatch');
    const mode = dto.payment_mode ?? 'pos';
    const asset = this.assets.asset(p.mode);
    const rate = this.rates.rate(m.display_currency);
    const problem =
      this.refusal(p, m, dto) ??
      (!asset ? new AppError('asset_unavailable') : !rate ? new AppError('unsupported_currency', { expected_fiat_code: m.display_currency }) : null);
    if (problem || !asset || !rate) {
      // An idempotent replay wins over every later check (DESIGN's order): look for one only now.
      const existing = dto.idempotency_key ? await this.repo.findByKey(p.partnerId, m.id, dto.idempotency_key) : null;
      if (existing) return { request: existing, created: false };
      throw problem;
    }
    const expiry = dto.expiry_minutes ?? (mode === 'service' ? SERVICE_MODE_DEFAULT_EXPIRY_MINUTES : p.defaultExpiryMinutes);
    const n: NewRequest = {
      id: randomUUID(),
      partnerId: p.partnerId,
      merchantId: m.id,
      testMode: m.test_mode,
      idempotencyKey: dto.idempotency_key ?? internalIdempotencyKey(randomUUID()),
      fiatAmount: dto.fiat_amount_int,
      fiatCurrency: m.display_currency,
      rate,
      baseAmount: fiatToTokenAmount(dto.fiat_amount_int, fiatExponent(m.display_currency), asset.decimals, rate),
      chainId: asset.chainId,
      tokenAddress: asset.token,
      recipient: m.wallet_address!,
      memo: dto.memo ?? null,
      paymentMode: mode,
      customerName: dto.customer_name ?? null,
      customerEmail: dto.customer_email ?? null,
      customerPhone: dto.customer_phone ?? null,
      metadata: dto.metadata ?? {},
      expiryMinutes: expiry,
      graceMinutes: this.config.latePaymentGraceMinutes,
    };
    const outcome = await this.repo.insertOrFind(n);
    if (outcome?.created) void this.afterCommit.requestCreated(outcome.request.id, outcome.request.expiresAt);
    return outcome;
  }

  /** The checks after the replay, in DESIGN's order: onboarding, disabled, currency, expiry. */
  private refusal(p: Principal, m: MerchantForCreate, dto: CreateRequestDto): AppError | null {
    if (m.onboarding_status !== 'complete' || !m.wallet_address) return new AppError('merchant_onboarding_incomplete');
    if (m.disabled) return new AppError('merchant_disabled');
    if (dto.fiat_currency_code !== undefined && normalizeCurrency(dto.fiat_currency_code) !== m.display_currency) {
      return new AppError('currency_mismatch', { expected_fiat_code: m.display_currency });
    }
    if (dto.expiry_minutes !== undefined && !p.allowedExpiryMinutes.includes(dto.expiry_minutes)) {
      return new AppError('invalid_expiry_minutes', { allowed_expiry_minutes: p.allowedExpiryMinutes });
    }
    return null;
  }

  async get(p: Principal, id: string): Promise<PaymentRequest> {
    const r = await this.repo.findOwned(p.partnerId, p.mode === 'test', id);
    if (!r) throw AppError.notFound();
    return r;
  }

  async list(p: Principal, q: ListRequestsQuery): Promise<RequestPage> {
    const limit = q.limit ?? PAGE_DEFAULT;
    const offset = q.offset ?? 0;
    const { items, hasMore } = await this.repo.list({
      partnerId: p.partnerId,
      testMode: p.mode === 'test',
      status: q.status,
      proofStatus: q.proof_status,
      merchantId: q.account_id,
      since: q.since,
      until: q.until,
      limit,
      offset,
    });
    return { items, hasMore, limit, offset };
  }

  /** Spec §4.4: only requested with proof none; otherwise 409 with the current request beside the error. */
  async cancel(p: Principal, id: string): Promise<PaymentRequest> {
    const scope = { partnerId: p.partnerId, testMode: p.mode === 'test' };
    const voided = await this.repo.applyStatus(id, 'cancel', { scope });
    if (voided) return voided;
    const current = await this.repo.findOwned(p.partnerId, p.mode === 'test', id);
    if (!current) throw AppError.notFound();
    const fields = toRequestResponse(current, this.config.payUrl, new Date());
    throw new AppError('cannot_cancel', { ...fields, ok: false, error: 'cannot_cancel' });
  }
}
