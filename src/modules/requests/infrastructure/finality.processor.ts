import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { FINALITY_JOBS, QUEUES } from '../../../common/queue/queues';
import { keepSchedules } from '../../../common/queue/schedules';
import { FinalityService } from '../application/finality.service';

/**
 * The finality re-read, every FINALITY_CHECK_INTERVAL_MS: one job scheduler for the deployment, whatever the
 * number of workers. Concurrency 1 per worker; runs on two workers at once are harmless (every write is
 * conditional), merely wasteful.
 */
@Processor(QUEUES.finality, { concurrency: 1 })
export class FinalityProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Finality');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.finality) private readonly queue: Queue,
    private readonly finality: FinalityService,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules([{ queue: this.queue, id: FINALITY_JOBS.settle, every: this.config.finalityCheckIntervalMs }], this.logger);
  }

  onModuleDestroy(): void {
    this.stop?.();
  }

  async process(job: Job): Promise<unknown> {
    if (job.name !== FINALITY_JOBS.settle) throw new Error(`no handler for finality job ${job.name}`);
    return this.finality.settleAll();
  }
}
