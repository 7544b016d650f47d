import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { MAINTENANCE_JOBS, QUEUES } from '../../common/queue/queues';
import { keepSchedules } from '../../common/queue/schedules';
import { WebhookEventsRepository } from './webhook-events.repository';
import { WebhookDeliveryQueue } from './webhook-delivery.queue';

// A due event gets this long to be picked up before its job is looked for.
const REDRIVE_GRACE_MS = 5_000;
const REDRIVE_BATCH = 1000;

/**
 * The outbox re-drive, every WEBHOOK_REDRIVE_MS: finds events that are due (or stuck in 'delivering' longer than an attempt can take)
 * and makes sure each has its job. Postgres is the system of record, so a Redis that lost its data, a relay
 * that failed after commit, or a job that exhausted its retries loses no event.
 */
@Injectable()
export class OutboxRedrive implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('OutboxRedrive');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.maintenance) private readonly maintenance: Queue,
    private readonly events: WebhookEventsRepository,
    private readonly deliveries: WebhookDeliveryQueue,
  ) {}

  async run(): Promise<number> {
    // An attempt claimed longer ago than the poster's deadline plus WEBHOOK_STALL_MARGIN_MS is taken for stalled
    // (its worker died) and sent again in its slot. The same margin the gate leases a running attempt for: a live
    // attempt run on from the gate has no job to show it is alive, and a slow claim or record must
    // not get it sent twice.
    const attemptMaxMs = this.config.webhookTimeoutMs + this.config.webhookStallMarginMs;
    const overdue = await this.events.overdue(REDRIVE_GRACE_MS, attemptMaxMs, REDRIVE_BATCH);
    const added = await Promise.all(overdue.map((due) => this.deliveries.ensureJob(due)));
    const n = added.filter(Boolean).length;
    if (n > 0) this.logger.warn(`re-queued ${n} webhook deliveries whose job was missing`);
    return n;
  }

  async onApplicationBootstrap(): Promise<void> {
    // Finding the schedule gone (first start, or Redis back empty), re-drive at once rather than at the first tick.
    this.stop = await keepSchedules(
      [{ queue: this.maintenance, id: MAINTENANCE_JOBS.outboxRedrive, every: this.config.webhookRedriveMs, onCreated: () => this.run() }],
      this.logger,
    );
  }

  onModuleDestroy(): void {
    this.stop?.();
  }
}
