import { getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { ALL_QUEUES } from '../../common/queue/queues';
import { DeliveriesService } from '../webhooks/deliveries.service';
import { MetricsService, SCRAPE_TIMEOUT_MS } from './metrics.service';

export const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/**
 * Gauges read when Prometheus scrapes, so every instance reports the same shared truth (queues live in
 * Redis, deliveries in Postgres):
 *  - `prs_queue_jobs{queue,state}`: BullMQ job counts of every queue of the service;
 *  - `prs_webhook_deliveries{state}`: webhook deliveries not finished yet (one per delivery_id), pending or
 *    delivering: the backlog. Finished ones are counted as their attempts are recorded
 *    (`prs_webhook_attempts_total`, MetricsService): a count of the whole history grew with it, past the
 *    scrape's bound within hours at 1,000 events/s.
 */
@Injectable()
export class ScrapeCollectors implements OnModuleInit {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: MetricsService,
    private readonly moduleRef: ModuleRef,
    private readonly deliveriesService: DeliveriesService,
  ) {}

  onModuleInit(): void {
    const queues = ALL_QUEUES.map((name) => this.moduleRef.get<Queue>(getQueueToken(name), { strict: false }));
    const warn = (e: Error) => this.logger.warn(`scrape: ${e.message}`);

    this.metrics.gauge(
      { name: 'prs_queue_jobs', help: 'BullMQ jobs per queue and state', labelNames: ['queue', 'state'], source: 'queues' },
      async () => {
        const counts = await Promise.all(queues.map((q) => q.getJobCounts(...QUEUE_STATES)));
        return queues.flatMap((q, i) =>
          QUEUE_STATES.map((state) => ({ labels: { queue: q.name, state }, value: counts[i][state] ?? 0 })),
        );
      },
      warn,
    );

    this.metrics.gauge(
      { name: 'prs_webhook_deliveries', help: 'Webhook deliveries not finished yet (the backlog), by state', labelNames: ['state'], source: 'deliveries' },
      async () => (await this.deliveriesService.backlog(SCRAPE_TIMEOUT_MS)).map((r) => ({ labels: { state: r.state }, value: r.n })),
      warn,
    );
  }
}
