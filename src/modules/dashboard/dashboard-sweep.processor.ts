import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { DASHBOARD_JOBS, QUEUES } from '../../common/queue/queues';
import { keepSchedules } from '../../common/queue/schedules';
import { SESSION_IDLE_MS } from './dashboard-auth.service';
import { DashboardNonceRepository } from './dashboard-nonce.repository';
import { DashboardSessionRepository } from './dashboard-session.repository';

/** Often enough that the tables stay small; an ended session or nonce is refused whether swept or not. */
export const DASHBOARD_SWEEP_EVERY_MS = 10 * 60 * 1000;

/**
 * The `dashboard` queue: deletes sessions past their absolute or idle end and nonces past their time (a used
 * nonce is deleted when used). A sign-in only sweeps its own merchant's sessions, so without this the rows of
 * merchants that never sign in again would stay forever.
 */
@Processor(QUEUES.dashboard)
export class DashboardSweepProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DashboardSweep');
  private stop?: () => void;

  constructor(
    @InjectQueue(QUEUES.dashboard) private readonly queue: Queue,
    private readonly sessions: DashboardSessionRepository,
    private readonly nonces: DashboardNonceRepository,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules(
      [{ queue: this.queue, id: DASHBOARD_JOBS.sweep, every: DASHBOARD_SWEEP_EVERY_MS, onCreated: () => this.sweep() }],
      this.logger,
    );
  }

  onModuleDestroy(): void {
    this.stop?.();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name) {
      case DASHBOARD_JOBS.sweep:
        return this.sweep();
      default:
        throw new Error(`no handler for dashboard job "${job.name}"`);
    }
  }

  private async sweep(): Promise<{ sessions: number; nonces: number }> {
    const sessions = await this.sessions.deleteEnded(SESSION_IDLE_MS);
    const nonces = await this.nonces.deleteExpired();
    if (sessions || nonces) this.logger.log(`removed ${sessions} ended sessions, ${nonces} expired nonces`);
    return { sessions, nonces };
  }
}
