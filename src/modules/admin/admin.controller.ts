import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { BodyCheckGuard } from '../../common/http/body';
import { PartnerLimiter } from '../../common/rate-limit/partner-limiter';
import { ApiKeyService } from '../auth/api-key.service';
import { merchantBody } from '../merchants/merchant.mapper';
import { MerchantsService } from '../merchants/merchants.service';
import { RatesService } from '../rates/rates.service';
import { WebhookSettingsService } from '../webhooks/webhook-settings.service';
import { AdminTokenGuard } from './admin-token.guard';
import { CreateKeyDto, CreatePartnerDto, UpdatePartnerDto } from './admin.dto';
import { issuedKeyBody, keysBody, partnerBody, ratesBody, revokedKeyBody } from './admin.mapper';
import type { Partner } from '../partners/partner';
import { PartnersService } from '../partners/partners.service';
import { UuidParamPipe } from '../../common/http/uuid-param.pipe';
import { AdminActor } from '../audit/admin-actor.decorator';
import type { Actor } from '../audit/audit';
import { NoFields } from '../../common/http/validation';

/** The operator API of DESIGN §4, on the admin listener only. */
@Controller('admin/api')
@UseGuards(AdminTokenGuard, BodyCheckGuard)
export class AdminController {
  constructor(
    private readonly partners: PartnersService,
    private readonly keys: ApiKeyService,
    private readonly merchants: MerchantsService,
    private readonly webhooks: WebhookSettingsService,
    private readonly rates: RatesService,
    private readonly limiter: PartnerLimiter,
  ) {}

  @Post('partners')
  async createPartner(@Body() dto: CreatePartnerDto, @AdminActor() actor: Actor) {
    return this.partnerBody(await this.partners.create(dto, actor));
  }

  @Get('partners/:id')
  async getPartner(@Param('id', UuidParamPipe) id: string) {
    return this.partnerBody(await this.partners.get(id));
  }

  @Patch('partners/:id')
  async updatePartner(@Param('id', UuidParamPipe) id: string, @Body() dto: UpdatePartnerDto, @AdminActor() actor: Actor) {
    return this.partnerBody(await this.partners.update(id, dto, actor));
  }

  @Post('partners/:id/keys')
  async createKey(@Param('id', UuidParamPipe) id: string, @Body() dto: CreateKeyDto, @AdminActor() actor: Actor) {
    return issuedKeyBody(await this.keys.issue(id, dto, actor));
  }

  @Get('partners/:id/keys')
  async listKeys(@Param('id', UuidParamPipe) id: string, @Query() _query: NoFields) {
    return keysBody(await this.keys.list(id));
  }

  @Delete('partners/:id/keys/:keyId')
  async revokeKey(@Param('id', UuidParamPipe) id: string, @Param('keyId', UuidParamPipe) keyId: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return revokedKeyBody(await this.keys.revoke(id, keyId, actor));
  }

  @Post('merchants/:id/disable')
  @HttpCode(200)
  async disable(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return merchantBody(await this.merchants.setDisabled(id, true, actor));
  }

  @Post('merchants/:id/enable')
  @HttpCode(200)
  async enable(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return merchantBody(await this.merchants.setDisabled(id, false, actor));
  }

  /** → the merchant object, wallet_address null; 409 conflict when it has none or proved it. */
  @Post('merchants/:id/release-wallet')
  @HttpCode(200)
  async releaseWallet(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    return merchantBody(await this.merchants.releaseWallet(id, actor));
  }

  @Get('rates')
  listRates(@Query() _query: NoFields) {
    return ratesBody(this.rates.list());
  }

  /** A manual refresh on a partner's behalf: at most one per minute per partner (spec §8), portal included. */
  @Post('partners/:id/rates/refresh')
  @HttpCode(200)
  async refreshRates(@Param('id', UuidParamPipe) id: string, @AdminActor() actor: Actor, @Body() _body: NoFields) {
    await this.partners.get(id);
    await this.limiter.consume('rates-refresh', id, 1);
    return ratesBody(await this.rates.refresh({ actor, partnerId: id }));
  }

  /** The partner object shows its webhook URL and switch, which the webhooks module keeps. */
  private async partnerBody(p: Partner) {
    return partnerBody(p, await this.webhooks.status(p.id));
  }
}
