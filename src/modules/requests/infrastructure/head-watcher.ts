import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { QUEUES, type VerificationJob } from '../../../common/queue/queues';
import { AssetRegistry } from '../../chain/asset-registry';

/**
 * Verifications waiting for their transaction or confirmations can only change when a block arrives. One
 * cheap tip read per mode and interval; on a new block every waiting verification runs now instead of at
 * its next poll. Idempotent: several workers doing this only promote the same jobs.
 */
@Injectable()
export class HeadWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('HeadWatcher');
  private readonly tips = new Map<Mode, number>();
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.verification) private readonly queue: Queue<VerificationJob>,
    private readonly assets: AssetRegistry,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.headPollMs);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      let advanced = false;
      for (const mode of MODES) {
        const reader = this.assets.reader(mode);
        if (!reader) continue;
        const tip = await reader.tip().catch(() => null);
        if (tip === null) continue;
        if (tip !== this.tips.get(mode)) advanced = true;
        this.tips.set(mode, tip);
      }
      if (!advanced) return;
      const waiting = await this.queue.getDelayed(0, 999);
      await Promise.all(waiting.map((job) => job.promote().catch(() => undefined)));
    } catch (e) {
      this.logger.warn(`head watch failed: ${(e as Error).message}`);
    } finally {
      this.busy = false;
    }
  }
}
