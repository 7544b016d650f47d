import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { AdminController } from './admin.controller';
import { PartnersModule } from '../partners/partners.module';

/** The operator API over partners, their keys, merchants and rates (partners themselves: PartnersModule). */
@Module({
  imports: [PartnersModule, AuthModule, MerchantsModule],
  controllers: [AdminController],
})
export class AdminModule {}
