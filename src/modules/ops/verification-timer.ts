import { WorkerHost } from '@nestjs/bullmq';
import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Job } from 'bullmq';
import { QUEUES } from '../../common/queue/queues';
import { MetricsService } from './metrics.service';

/** `verified`, `rejected`, `moot` from the processor's return value (`rejected: <reason>` keeps its head only). */
export function verificationOutcome(returnValue: unknown): string {
  const head = typeof returnValue === 'string' ? returnValue.split(':')[0].trim() : '';
  return /^[a-z_]{1,32}$/.test(head) ? head : 'other';
}

/**
 * Worker role: feeds prs_verification_duration_seconds from the verification queue's own workers, so the
 * verification code needs no metrics calls. A job's `timestamp` is when the hash was queued; waiting for
 * the transaction and its confirmations re-delays the same job, so `finishedOn - timestamp` is the whole
 * latency a payer sees. Jobs that exhaust their retries count as `failed`.
 */
@Injectable()
export class VerificationTimer implements OnApplicationBootstrap {
  constructor(private readonly discovery: DiscoveryService, private readonly metrics: MetricsService) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const host = wrapper.instance as unknown;
      if (!(host instanceof WorkerHost)) continue;
      let worker: WorkerHost['worker'];
      try {
        worker = host.worker;
      } catch {
        continue;
      }
      if (!worker || worker.name !== QUEUES.verification) continue;
      worker.on('completed', (job: Job, result: unknown) => this.record(job, verificationOutcome(result)));
      worker.on('failed', (job: Job | undefined) => {
        if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) this.record(job, 'failed');
      });
    }
  }

  private record(job: Job, outcome: string): void {
    const end = job.finishedOn ?? Date.now();
    this.metrics.observeVerification((end - job.timestamp) / 1000, outcome);
  }
}
