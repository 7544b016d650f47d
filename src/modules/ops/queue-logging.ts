import { WorkerHost, getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { ALL_QUEUES } from '../../common/queue/queues';

const EVERY_MS = 10_000;

/**
 * BullMQ queues and workers report Redis connection errors as 'error' events and, with no listener, print
 * them with console.error: multi-line text in the middle of JSON logs, once per reconnect attempt. This
 * listens instead and writes one structured warning per queue or worker every 10 s at most.
 */
@Injectable()
export class QueueLogging implements OnApplicationBootstrap {
  private readonly logger = new Logger('Queues');
  private readonly last = new Map<string, number>();

  constructor(private readonly moduleRef: ModuleRef, private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    for (const name of ALL_QUEUES) {
      const queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
      queue.on('error', (e: Error) => this.warn(`queue ${name}`, e));
    }
    for (const wrapper of this.discovery.getProviders()) {
      const host = wrapper.instance as unknown;
      if (!(host instanceof WorkerHost)) continue;
      try {
        const worker = host.worker;
        worker.on('error', (e: Error) => this.warn(`worker ${worker.name}`, e));
      } catch {
        // a WorkerHost whose worker was not started (no worker role)
      }
    }
  }

  private warn(what: string, e: Error): void {
    const now = Date.now();
    if (now - (this.last.get(what) ?? 0) < EVERY_MS) return;
    this.last.set(what, now);
    this.logger.warn(`${what}: ${e.message}`);
  }
}
