import { Global, Module } from '@nestjs/common';
import { NotificationRequestsPort } from '../notifications/notification-facts.port';
import { RequestFactsPort } from '../webhooks/request-facts.port';
import { RequestFactsService } from './application/request-facts.service';
import { RequestsCoreModule } from './requests-core.module';

/**
 * Global so that webhooks and notifications (whose outboxes requests writes to, so they must not import
 * requests back) can inject the read ports they declare. Only the port is global; the repository stays inside requests.
 */
@Global()
@Module({
  imports: [RequestsCoreModule],
  providers: [
    { provide: RequestFactsPort, useExisting: RequestFactsService },
    { provide: NotificationRequestsPort, useExisting: RequestFactsService },
  ],
  exports: [RequestFactsPort, NotificationRequestsPort],
})
export class RequestFactsModule {}
