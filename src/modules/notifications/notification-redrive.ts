import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { NOTIFICATION_JOBS } from '../../common/queue/queues';
import { keepSchedules } from '../../common/queue/schedules';
import { MetricsService } from '../ops/metrics.service';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository } from './notifications.repository';

const REDRIVE_BATCH = 1000;

/**
 * The notifications outbox re-drive, every NOTIFY_REDRIVE_MS: messages held past their lease are failed
 * 'in doubt' (never resent: at most once) once handed over (or claimed by a worker that does not mark the
 * hand-over), tried again when their worker stopped before handing anything over (abandoned unsent past
 * NOTIFY_GIVE_UP_MS), and pending messages due for longer than one period get their job back. Each lapsed
 * attempt is counted under its outcome in prs_notification_attempts_total. Postgres is the system of record, so a Redis that lost its keys loses no message.
 */
@Injectable()
export class NotificationRedrive implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('NotificationRedrive');
  private stop?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repo: NotificationsRepository,
    private readonly queue: NotificationQueue,
    private readonly metrics: MetricsService,
  ) {}

  async run(): Promise<number> {
    const lapsed = await this.repo.failInDoubt(this.config.notifyGiveUpMs);
    const of = (o: string) => lapsed.filter((d) => d.outcome === o).map((d) => d.id);
    for (const d of lapsed) this.metrics.countNotificationAttempt(d.channel, d.outcome);
    const [doubtful, retried, abandoned] = [of('in_doubt'), of('retry'), of('abandoned')];
    if (doubtful.length > 0) this.logger.error(`${doubtful.length} notification(s) in doubt after their worker stopped mid-send, not resent: ${doubtful.join(', ')}`);
    if (retried.length > 0) this.logger.warn(`${retried.length} notification(s) whose worker stopped before handing them over, tried again: ${retried.join(', ')}`);
    if (abandoned.length > 0) this.logger.error(`${abandoned.length} notification(s) whose worker stopped before handing them over, past the give-up age, abandoned unsent: ${abandoned.join(', ')}`);
    const overdue = await this.repo.overdue(this.config.notifyRedriveMs, REDRIVE_BATCH);
    const added = (await Promise.all(overdue.map((due) => this.queue.ensureJob(due)))).filter(Boolean).length;
    if (added > 0) this.logger.warn(`re-queued ${added} notification(s) whose job was missing`);
    return added;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.stop = await keepSchedules(
      [{ queue: this.queue.raw, id: NOTIFICATION_JOBS.redrive, every: this.config.notifyRedriveMs, onCreated: () => this.run() }],
      this.logger,
    );
  }

  onModuleDestroy(): void {
    this.stop?.();
  }
}
