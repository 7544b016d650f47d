import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MerchantsCoreModule } from '../merchants/merchants-core.module';
import { RequestsService } from './application/requests.service';
import { RequestsCoreModule } from './requests-core.module';

/**
 * The create/read/cancel use cases of payment requests without any HTTP: what the partner API, the dashboard
 * and the plan scheduler (which runs in the worker role, where no controller or guard may be instantiated)
 * all create requests through.
 */
@Module({
  imports: [AuthModule, MerchantsCoreModule, RequestsCoreModule],
  providers: [RequestsService],
  exports: [RequestsService],
})
export class RequestsServiceModule {}
