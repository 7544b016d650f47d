import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsModule } from '../merchants/merchants.module';
import { PayService } from './application/pay.service';
import { PayController } from './http/pay.controller';
import { RequestsController } from './http/requests.controller';
import { RequestFactsModule } from './request-facts.module';
import { RequestsCoreModule } from './requests-core.module';
import { RequestsServiceModule } from './requests-service.module';

/** The partner API and pay API on payment requests (HTTP role). */
@Module({
  imports: [AuthModule, MerchantsModule, RequestsCoreModule, RequestsServiceModule, RequestFactsModule],
  controllers: [RequestsController, PayController],
  providers: [PayService],
  exports: [RequestsServiceModule, PayService],
})
export class RequestsModule {}
