import { Module } from '@nestjs/common';
import { DashboardWorkerModule } from './modules/dashboard/dashboard-worker.module';
import { PlansWorkerModule } from './modules/plans/plans-worker.module';
import { NotificationsWorkerModule } from './modules/notifications/notifications-worker.module';
import { RatesWorkerModule } from './modules/rates/rates-worker.module';
import { RequestsWorkerModule } from './modules/requests/requests-worker.module';
import { WebhooksWorkerModule } from './modules/webhooks/webhooks-worker.module';

/**
 * Everything the worker role runs: queue processors and repeating job schedulers. Mounted only when the
 * process has the worker role (`start` and `start:worker`).
 */
@Module({
  imports: [DashboardWorkerModule, RatesWorkerModule, RequestsWorkerModule, WebhooksWorkerModule, PlansWorkerModule, NotificationsWorkerModule],
})
export class WorkerModule {}
