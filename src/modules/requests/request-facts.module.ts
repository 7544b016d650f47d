import { Global, Module } from '@nestjs/common';
import { RequestFactsPort } from '../webhooks/request-facts.port';
import { RequestFactsService } from './application/request-facts.service';
import { RequestsCoreModule } from './requests-core.module';

/**
 * Global so that webhooks (whose outbox requests writes to, so it must not import requests back) can inject
 * the read port it declares. Only the port is global; the repository stays inside requests.
 */
@Global()
@Module({
  imports: [RequestsCoreModule],
  providers: [{ provide: RequestFactsPort, useExisting: RequestFactsService }],
  exports: [RequestFactsPort],
})
export class RequestFactsModule {}
