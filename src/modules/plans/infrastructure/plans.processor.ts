import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { PLAN_JOBS, QUEUES } from '../../../common/queue/queues';
import { keepSchedules } from '../../../common/queue/schedules';
import { PlanSchedulerService } from '../application/plan-scheduler.service';

/**
 * The plan scheduler's repeating job: one BullMQ job scheduler for the whole deployment (every
 * PLAN_SCHEDULER_INTERVAL_MS, 5 s by default, so a due charge exists within 15 s of its due time). Each run
 * selects due plans by state, so a lost or late run only delays charges, never loses one.
 */
@Processor(QUEUES.plans, { concurrency: 1 })
export class PlansProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Plans');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.plans) private readonly queue: Queue,
    private readonly scheduler: PlanSchedulerService,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules([{ queue: this.queue, id: PLAN_JOBS.charge, every: this.config.planSchedulerIntervalMs }], this.logger);
  }

  onModuleDestroy(): void {
    this.stop?.();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name) {
      case PLAN_JOBS.charge:
        return this.scheduler.run();
      default:
        throw new Error(`no handler for plans job ${job.name}`);
    }
  }
}
