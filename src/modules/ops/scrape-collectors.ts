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
 * Redis, deliveries in Postgres) and nothing has to be counted in process memory:
 *  - `prs_queue_jobs{queue,state}`: BullMQ job counts of every queue of the service;
 *  - `prs_webhook_deliveries{state}`: webhook events (one per delivery_id) by delivery state;
 *  - `prs_webhook_attempts{outcome}`: stored delivery attempts by outcome (delivered, retry, abandoned).
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

    // One read per scrape, shared by both gauges (the webhooks module owns the tables and bounds the read).
    let deliveries: ReturnType<DeliveriesService['stats']> | null = null;
    const readDeliveries = () => {
      deliveries ??= this.deliveriesService.stats(SCRAPE_TIMEOUT_MS).finally(() => setTimeout(() => (deliveries = null), 0));
      return deliveries;
    };

    this.metrics.gauge(
      { name: 'prs_webhook_deliveries', help: 'Webhook deliveries (events to deliver) by state', labelNames: ['state'], source: 'deliveries' },
      async () => (await readDeliveries()).events.map((r) => ({ labels: { state: r.state }, value: r.n })),
      warn,
    );
    this.metrics.gauge(
      { name: 'prs_webhook_attempts', help: 'Webhook delivery attempts by outcome', labelNames: ['outcome'], source: 'delivery_attempts' },
      async () => (await readDeliveries()).attempts.map((r) => ({ labels: { outcome: r.outcome }, value: r.n })),
      warn,
    );
  }
}
