import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { APP_CONFIG, MODES, type AppConfig, type Mode } from '../../../config/config';
import { QUEUES, type VerificationJob } from '../../../common/queue/queues';
import { AssetRegistry } from '../../chain/asset-registry';

const PAGE = 1000;
/** Bound on the delayed jobs read per tick; the rest still run at their VERIFY_POLL_MS delay. */
const MAX_SCANNED = 20_000;

/**
 * Verifications waiting for a block (their transaction mined, or confirmations) can only change when their
 * chain's tip moves. One cheap tip read per mode and interval; when a mode's tip moves, only the jobs waiting
 * for a block of that mode run now instead of at their next poll. Jobs backing off (a hash the node does not
 * know, RPC failures) keep their delays. Each job skips the receipt when the tip is the one it last saw, so a
 * job reads at most one receipt per block however often it is woken. Idempotent: several workers doing this
 * only promote the same jobs.
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
      const advanced = new Set<Mode>();
      for (const mode of MODES) {
        const reader = this.assets.reader(mode);
        if (!reader) continue;
        const tip = await reader.tip().catch(() => null);
        if (tip === null) continue;
        if (tip !== this.tips.get(mode)) advanced.add(mode);
        this.tips.set(mode, tip);
      }
      if (advanced.size === 0) return;
      // Read first, promote after: promoting while paging would shift the pages.
      const waiting: Job<VerificationJob>[] = [];
      for (let start = 0; start < MAX_SCANNED; start += PAGE) {
        const page = await this.queue.getDelayed(start, start + PAGE - 1);
        waiting.push(...page.filter((job) => wakes(job.data, advanced)));
        if (page.length < PAGE) break;
      }
      await Promise.all(waiting.map((job) => job.promote().catch(() => undefined)));
    } catch (e) {
      this.logger.warn(`head watch failed: ${(e as Error).message}`);
    } finally {
      this.busy = false;
    }
  }
}

/** A job waiting for a block of a chain that has just advanced. */
export function wakes(data: VerificationJob | undefined, advanced: ReadonlySet<Mode>): boolean {
  const wait = data?.wait;
  return wait?.for === 'block' && advanced.has(wait.mode);
}
