import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { QUEUES } from '../../common/queue/queues';
import { keepSchedules } from '../../common/queue/schedules';
import { RatesService } from './rates.service';

/** The automatic refresh: one job scheduler, whatever the number of workers (no per-partner limit). */
@Processor(QUEUES.rates, { concurrency: 1 })
export class RatesProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Rates');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.rates) private readonly queue: Queue,
    private readonly rates: RatesService,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules([{ queue: this.queue, id: 'rates-refresh', every: this.config.ratesRefreshIntervalMs }], this.logger);
  }

  onModuleDestroy(): void {
    this.stop?.();
  }

  async process(): Promise<number> {
    return (await this.rates.refresh()).length;
  }
}
