import { getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { MODES } from '../../config/config';
import { ALL_QUEUES } from '../../common/queue/queues';
import { AssetRegistry } from '../chain/asset-registry';
import { DeliveriesService } from '../webhooks/deliveries.service';
import { MetricsService, SCRAPE_TIMEOUT_MS, withTimeout } from './metrics.service';

export const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/**
 * Gauges read when Prometheus scrapes, so every instance reports the same shared truth (queues live in
 * Redis, deliveries in Postgres):
 *  - `prs_queue_jobs{queue,state}`: BullMQ job counts of every queue of the service;
 *  - `prs_webhook_deliveries{state}`: webhook deliveries not finished yet (one per delivery_id), pending or
 *    delivering: the backlog. Finished ones are counted as their attempts are recorded
 *    (`prs_webhook_attempts_total`, MetricsService): a count of the whole history grew with it, past the
 *    scrape's bound within hours at 1,000 events/s.
 *  - `prs_chain_tip{mode}` and `prs_chain_tip_age_seconds{mode}`: the block number each configured mode's RPC
 *    calls its tip, and how old that block is (now − its timestamp). /health/ready only asks the RPC for its
 *    chain id, so a node that stopped following its chain (stuck sync, a load balancer's lagging backend)
 *    stays "up" there while nothing verifies; these are what shows it. A mode whose RPC does not answer within
 *    the scrape's bound has no sample (readiness names it).
 */
@Injectable()
export class ScrapeCollectors implements OnModuleInit {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: MetricsService,
    private readonly moduleRef: ModuleRef,
    private readonly deliveriesService: DeliveriesService,
    private readonly assets: AssetRegistry,
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

    // One read per scrape for both chain gauges: the registry starts every collect in the same tick.
    let tipRead: Promise<Array<{ mode: string; tip: number; age: number | null }>> | null = null;
    const tips = () => {
      if (!tipRead) {
        tipRead = this.readTips();
        setImmediate(() => (tipRead = null));
      }
      return tipRead;
    };
    this.metrics.gauge(
      { name: 'prs_chain_tip', help: "The block number each mode's RPC reports as its tip, read at scrape time", labelNames: ['mode'], source: 'chain' },
      async () => (await tips()).map((r) => ({ labels: { mode: r.mode }, value: r.tip })),
      warn,
    );
    this.metrics.gauge(
      {
        name: 'prs_chain_tip_age_seconds',
        help: "Seconds since the timestamp of the block each mode's RPC reports as its tip: grows while the node does not follow its chain",
        labelNames: ['mode'],
        source: 'chain',
      },
      async () => (await tips()).flatMap((r) => (r.age === null ? [] : [{ labels: { mode: r.mode }, value: Math.round(r.age * 1000) / 1000 }])),
      warn,
    );
  }

  /**
   * Each configured mode's tip and its age. A mode whose RPC does not answer in time has no sample; when no
   * configured mode answers the read fails (`prs_scrape_source_up{source="chain"}` 0).
   */
  private async readTips(): Promise<Array<{ mode: string; tip: number; age: number | null }>> {
    const readers = MODES.flatMap((mode) => {
      const reader = this.assets.reader(mode);
      return reader ? [{ mode, reader }] : [];
    });
    const bound = SCRAPE_TIMEOUT_MS - 200;
    const read = await Promise.all(readers.map(async ({ mode, reader }) => {
      try {
        return await withTimeout((async () => {
          const tip = await reader.tip();
          const block = await reader.block(tip);
          return { mode, tip, age: block ? Date.now() / 1000 - block.timestamp : null };
        })(), bound, `chain_${mode}`);
      } catch {
        return null;
      }
    }));
    const answered = read.filter((r) => r !== null);
    if (readers.length > 0 && answered.length === 0) throw new Error('no configured chain RPC answered');
    return answered;
  }
}
