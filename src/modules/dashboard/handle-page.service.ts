import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { AppError } from '../../common/errors';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { addressBucket } from '../../common/rate-limit/client-address';
import { scaledLimit } from '../../common/rate-limit/rate-limit';
import type { Merchant } from '../merchants/merchant';
import { MerchantHandlesService } from '../merchants/merchant-handles.service';
import { MerchantsService } from '../merchants/merchants.service';
import type { PaymentRequest } from '../requests/domain/payment-request';
import { RequestsService } from '../requests/application/requests.service';
import { DashboardService } from './dashboard.service';
import type { CreateHandleRequestDto } from './dashboard.dto';

/** The public handle page's API (DESIGN §5): anyone pays the merchant an amount of their choice. */
@Injectable()
export class HandlePageService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: PartnerLimiter,
    private readonly handles: MerchantHandlesService,
    private readonly merchants: MerchantsService,
    private readonly requests: RequestsService,
    private readonly dashboard: DashboardService,
  ) {}

  /** The merchant behind a current handle; unknown or retired → 404 not_found. */
  async merchant(handle: string): Promise<{ handle: string; merchant: Merchant }> {
    const id = await this.handles.merchantOf(handle);
    if (!id) throw AppError.notFound();
    return { handle: handle.toLowerCase(), merchant: await this.merchants.mustLoad(id) };
  }

  /**
   * Source `handle`, metadata null, payment_mode pos, the partner's default expiry. An `Idempotency-Key` (the
   * page keeps one while the details stay the same, so a retry after a lost answer gets the request already made)
   * replays as the API's key does; it is stored as `handle:<merchant id>:<key>`, apart from the partner's keys
   * (which never contain a colon) and the dashboard's.
   */
  async createRequest(
    handle: string,
    dto: CreateHandleRequestDto,
    idempotencyKey: string | undefined,
    clientAddress: string | undefined,
  ): Promise<{ request: PaymentRequest; created: boolean }> {
    const { merchant } = await this.merchant(handle);
    const scale = this.config.rateLimitScale;
    // HANDLE_ADDRESS_RATE_LIMIT a minute per client address (IPv6 by /64) and handle, below the merchant's budget
    // (by default half of it): one address alone cannot spend the page's budget for every payer. On top of the
    // route's PUBLIC_RATE_LIMIT per address (DESIGN §5: "limited per client address like the pay API").
    await this.limits.consume('handle-requests-from', `${merchant.id}:${addressBucket(clientAddress)}`, scaledLimit(this.config.handleAddressRateLimit, scale));
    // HANDLE_REQUEST_RATE_LIMIT a minute per merchant, from every address together (× RATE_LIMIT_SCALE). Each
    // request holds an amount of the merchant's for the partner's default expiry: from many addresses (IPv6
    // gives anyone many /64s) an anonymous caller made rows without end, filling the merchant's lists and
    // pushing the unique amounts of its next requests up (an abuse hunt: 1,200 in 15 s).
    await this.limits.consume('handle-requests', merchant.id, scaledLimit(this.config.handleRequestRateLimit, scale));
    return this.requests.create(await this.dashboard.creatorOf(merchant), {
      merchantId: merchant.id,
      fiatAmount: dto.fiat_amount_int,
      fiatCurrencyCode: dto.fiat_currency_code,
      memo: dto.memo,
      idempotencyKey: idempotencyKey === undefined ? undefined : `handle:${merchant.id}:${idempotencyKey}`,
      metadata: null,
      paymentMode: 'pos',
      customerEmail: dto.customer_email,
      source: 'handle',
    });
  }
}
