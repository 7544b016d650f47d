import { Module } from '@nestjs/common';
import { RequestsWorkerModule } from './modules/requests/requests.module';

/**
 * Everything the worker role runs: queue processors and repeating job schedulers. Mounted only when the
 * process has the worker role (`start` and `start:worker`).
 */
@Module({
  imports: [RequestsWorkerModule],
})
export class WorkerModule {}
