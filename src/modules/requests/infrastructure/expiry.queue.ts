import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { MicroBatch } from '../../../common/micro-batch';
import { QUEUES, type ExpiryJob } from '../../../common/queue/queues';

/** Producer of the expiry queue: a delayed job at each request's expires_at. */
@Injectable()
export class ExpiryQueue {
  constructor(@InjectQueue(QUEUES.expiry) private readonly queue: Queue<ExpiryJob>) {}

  /** Creates that finish in one event-loop turn share one addBulk: one Redis round trip, not one each. */
  private readonly batch = new MicroBatch<{ requestId: string; expiresAt: Date }, unknown>((xs) =>
    this.queue.addBulk(
      xs.map(({ requestId, expiresAt }) => ({
        name: 'expire',
        data: { requestId },
        opts: { jobId: `expire-${requestId}`, delay: Math.max(0, expiresAt.getTime() - Date.now()) },
      })),
    ),
  );

  async schedule(requestId: string, expiresAt: Date): Promise<void> {
    await this.batch.submit({ requestId, expiresAt });
  }
}
