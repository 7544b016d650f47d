import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { PayService } from './application/pay.service';
import { RequestsService } from './application/requests.service';
import { PayController } from './http/pay.controller';
import { RequestsController } from './http/requests.controller';
import { RequestFactsModule } from './request-facts.module';
import { RequestsCoreModule } from './requests-core.module';

/** The partner API and pay API on payment requests (HTTP role). */
@Module({
  imports: [AuthModule, MerchantsModule, RequestsCoreModule, RequestFactsModule],
  controllers: [RequestsController, PayController],
  providers: [RequestsService, PayService],
  exports: [RequestsService, PayService],
})
export class RequestsModule {}
