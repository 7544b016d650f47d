import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../../config/config';
import { QUEUES, SCHEDULED_JOBS } from '../../../common/queue/queues';
import { keepSchedules } from '../../../common/queue/schedules';
import { ChainScanService } from '../application/chain-scan.service';
import { ExpiryService } from '../application/expiry.service';
import { RequestsRepository } from './requests.repository';
import { VerificationQueue } from './verification.queue';

/**
 * The repeating chain-side work: the chain scan and the expiry sweep (the safety net of the delayed jobs).
 * BullMQ hands any job of a queue to any of its workers, so the queue has one processor dispatching by name.
 */
@Processor(QUEUES.scheduled, { concurrency: 2 })
export class ScheduledProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Scheduled');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.scheduled) private readonly queue: Queue,
    private readonly scan: ChainScanService,
    private readonly repo: RequestsRepository,
    private readonly expiry: ExpiryService,
    private readonly verification: VerificationQueue,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules(
      [
        { queue: this.queue, id: SCHEDULED_JOBS.chainScan, every: this.config.chainScanIntervalMs },
        // Its creation (the first start, or Redis back empty) also puts back the payers' verification jobs: they
        // live only in Redis, and a request whose job is lost stays attached with no note for ever (a Redis hunt).
        {
          queue: this.queue,
          id: SCHEDULED_JOBS.expirySweep,
          every: this.config.expirySweepIntervalMs,
          onCreated: () => this.redriveVerifications(),
        },
      ],
      this.logger,
    );
  }

  /**
   * Queues again the verification of every hash still attached, unanswered, within its claim window: a job that
   * exists is left alone (VerificationQueue.add). Without its job, a hash that is never mined got no
   * transaction_not_found note: the pay page kept waiting, and the payer's real hash was refused as
   * proof_already_attached (the chain scan still verified a real transfer). A re-queued job counts its wait
   * for the transaction from the row's latest change, at or after the hash's attachment: the note comes no
   * earlier than the lost job's would have, and no later than the wait after the re-queue.
   */
  private async redriveVerifications(): Promise<void> {
    const waiting = await this.repo.attachedUnanswered();
    for (const r of waiting) await this.verification.add(r.id, r.txHash, r.changedAt.getTime());
    if (waiting.length > 0) this.logger.warn(`queued again the verification of ${waiting.length} attached hash(es) (their jobs were not in Redis)`);
  }

  onModuleDestroy(): void {
    this.stop?.();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name) {
      case SCHEDULED_JOBS.chainScan:
        return this.scan.scanAll();
      case SCHEDULED_JOBS.expirySweep: {
        const expired = await this.expiry.sweep();
        const released = await this.repo.releaseClosedAmounts();
        if (expired || released) this.logger.log(`expired ${expired} requests, released ${released} amounts`);
        return { expired, released };
      }
      default:
        throw new Error(`no handler for scheduled job ${job.name}`);
    }
  }
}
