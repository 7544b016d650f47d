import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { PartnersService } from '../partners/partners.service';
import { assetId, parseAssetId } from '../chain/asset-id';
import { AssetRegistry } from '../chain/asset-registry';
import type { Merchant } from '../merchants/merchant';
import { NotificationsService, type SentMessage } from '../notifications/notifications.service';
import { MerchantHandlesService } from '../merchants/merchant-handles.service';
import { MerchantsService } from '../merchants/merchants.service';
import type { PaymentRequest } from '../requests/domain/payment-request';
import {
  RequestsService, type RequestCreator, type RequestListQuery, type RequestPage, type RequestScope,
} from '../requests/application/requests.service';
import type { CreateDashboardRequestDto, UpdateMeDto } from './dashboard.dto';
import type { DashboardAsset } from './dashboard.mapper';

export interface MerchantSettings {
  merchant: Merchant;
  handle: string | null;
  handleUrl: string | null;
  emailEnabled: boolean;
  smsEnabled: boolean;
}

/** Only this merchant's requests, in its partner and mode: another merchant's id is simply not found. */
export function merchantScope(m: Merchant): RequestScope {
  return { partnerId: m.partnerId, testMode: m.testMode, merchantId: m.id };
}

/**
 * The signed-in merchant's use cases (DESIGN §5): its settings and handle (the merchants module owns them)
 * and its requests, through the same create, read and cancel paths as the partner API.
 */
@Injectable()
export class DashboardService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly merchants: MerchantsService,
    private readonly handles: MerchantHandlesService,
    private readonly partners: PartnersService,
    private readonly requests: RequestsService,
    private readonly notifications: NotificationsService,
    private readonly registry: AssetRegistry,
  ) {}

  async settings(m: Merchant): Promise<MerchantSettings> {
    const handle = await this.handles.currentOf(m.id);
    return {
      merchant: m,
      handle,
      handleUrl: handle ? this.handles.url(handle) : null,
      emailEnabled: this.config.smtpUrl !== null,
      smsEnabled: this.config.sms !== null,
    };
  }

  async updateSettings(m: Merchant, dto: UpdateMeDto): Promise<MerchantSettings> {
    const updated = await this.merchants.updateProfile(m.id, {
      email: dto.email,
      displayName: dto.display_name,
      businessName: dto.business_name,
      country: dto.country,
      phone: dto.phone,
      website: dto.website,
      instagram: dto.instagram,
      industry: dto.industry,
      displayCurrency: dto.display_currency,
    });
    return this.settings(updated);
  }

  async claimHandle(m: Merchant, handle: string): Promise<{ handle: string; handleUrl: string }> {
    const claimed = await this.handles.claim(m.id, handle);
    return { handle: claimed, handleUrl: this.handles.url(claimed) };
  }

  /**
   * A request the merchant creates itself: source `dashboard`, metadata null, payment_mode pos, in its
   * partner's name and mode. An `Idempotency-Key` header (the form sends one per render) replays as the API's
   * key does (the controller checked its form); it is stored apart from the partner's keys, which can never contain a colon.
   */
  async createRequest(m: Merchant, dto: CreateDashboardRequestDto, idempotencyKey: string | undefined): Promise<{ request: PaymentRequest; created: boolean }> {
    return this.requests.create(await this.creatorOf(m), {
      merchantId: m.id,
      fiatAmount: dto.fiat_amount_int,
      fiatCurrencyCode: dto.fiat_currency_code,
      memo: dto.memo,
      idempotencyKey: idempotencyKey === undefined ? undefined : `dashboard:${m.id}:${idempotencyKey}`,
      metadata: null,
      paymentMode: 'pos',
      customerName: dto.customer_name,
      customerEmail: dto.customer_email,
      customerPhone: dto.customer_phone,
      expiryMinutes: dto.expiry_minutes,
      source: 'dashboard',
    });
  }

  /** The merchant's partner as the create path needs it (its mode is the merchant's). */
  async creatorOf(m: Merchant): Promise<RequestCreator> {
    const p = await this.partners.get(m.partnerId);
    return {
      partnerId: p.id,
      mode: m.testMode ? 'test' : 'live',
      allowedExpiryMinutes: p.allowedExpiryMinutes,
      defaultExpiryMinutes: p.defaultExpiryMinutes,
    };
  }

  list(m: Merchant, q: RequestListQuery): Promise<RequestPage> {
    return this.requests.list(merchantScope(m), q);
  }

  exportAll(m: Merchant, q: RequestListQuery): AsyncGenerator<PaymentRequest[]> {
    return this.requests.exportAll(merchantScope(m), q);
  }

  get(m: Merchant, id: string): Promise<PaymentRequest> {
    return this.requests.get(merchantScope(m), id);
  }

  /** One request with what was sent about it (DESIGN §6: "the dashboard shows what was sent for each request"). */
  async detail(m: Merchant, id: string): Promise<{ request: PaymentRequest; notifications: SentMessage[] }> {
    const request = await this.requests.get(merchantScope(m), id);
    return { request, notifications: await this.notifications.sentFor(request.id) };
  }

  cancel(m: Merchant, id: string): Promise<PaymentRequest> {
    return this.requests.cancel(merchantScope(m), id);
  }

  /**
   * The tokens the merchant's amounts are read in (the chain module owns them): its mode's configured asset,
   * which prices every new request (from memory), and `wanted` (a request's asset_id, perhaps an asset no mode
   * uses now) when the chain module read it once. Token metadata is public, so a lookup reveals nothing.
   */
  async assets(m: Merchant, wanted?: string): Promise<DashboardAsset[]> {
    const current = this.registry.asset(m.testMode ? 'test' : 'live');
    const list: DashboardAsset[] = current ? [{ assetId: current.assetId, symbol: current.symbol, decimals: current.decimals }] : [];
    const asked = wanted === undefined ? null : parseAssetId(wanted);
    if (asked && !list.some((a) => a.assetId.toLowerCase() === wanted!.toLowerCase())) {
      const token = await this.registry.tokenOf(asked.chainId, asked.token);
      if (token) list.push({ assetId: assetId(asked.chainId, asked.token), symbol: token.symbol, decimals: token.decimals });
    }
    return list;
  }
}
