import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { MerchantsService } from '../merchants/merchants.service';
import { AdminTokenGuard } from './admin-token.guard';
import { CreateKeyDto, CreatePartnerDto, UpdatePartnerDto } from './admin.dto';
import { PartnersService } from './partners.service';

/** The operator API of DESIGN §4, on the admin listener only. */
@Controller('admin/api')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(private readonly partners: PartnersService, private readonly merchants: MerchantsService) {}

  @Post('partners')
  createPartner(@Body() dto: CreatePartnerDto) {
    return this.partners.create(dto);
  }

  @Get('partners/:id')
  getPartner(@Param('id') id: string) {
    return this.partners.get(id);
  }

  @Patch('partners/:id')
  updatePartner(@Param('id') id: string, @Body() dto: UpdatePartnerDto) {
    return this.partners.update(id, dto);
  }

  @Post('partners/:id/keys')
  createKey(@Param('id') id: string, @Body() dto: CreateKeyDto) {
    return this.partners.createKey(id, dto);
  }

  @Get('partners/:id/keys')
  listKeys(@Param('id') id: string) {
    return this.partners.listKeys(id);
  }

  @Delete('partners/:id/keys/:keyId')
  revokeKey(@Param('id') id: string, @Param('keyId') keyId: string) {
    return this.partners.revokeKey(id, keyId);
  }

  @Post('merchants/:id/disable')
  @HttpCode(200)
  disable(@Param('id') id: string) {
    return this.merchants.setDisabled(id, true);
  }

  @Post('merchants/:id/enable')
  @HttpCode(200)
  enable(@Param('id') id: string) {
    return this.merchants.setDisabled(id, false);
  }
}
