import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { PartnersService } from './partners.service';

@Module({
  imports: [AuthModule, MerchantsModule],
  controllers: [AdminController],
  providers: [PartnersService, AdminTokenGuard],
  exports: [PartnersService],
})
export class AdminModule {}
