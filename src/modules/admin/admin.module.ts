import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { PartnersModule } from './partners.module';

/** The operator API over partners, their keys, merchants and rates (partners themselves: PartnersModule). */
@Module({
  imports: [PartnersModule, AuthModule, MerchantsModule],
  controllers: [AdminController],
  providers: [AdminTokenGuard],
})
export class AdminModule {}
