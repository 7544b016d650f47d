import { Injectable, Logger } from '@nestjs/common';
import { waitBriefly } from '../../common/queue/after-commit-wait';
import { NotificationQueue } from './notification.queue';
import { NotificationsRepository } from './notifications.repository';

/**
 * Moves committed outbox rows to the `notifications` queue. Postgres is the system of record: whatever this
 * fails to enqueue, the re-drive (NotificationRedrive) enqueues later, so no message is lost with Redis.
 */
@Injectable()
export class NotificationRelay {
  private readonly logger = new Logger('NotificationRelay');

  constructor(
    private readonly repo: NotificationsRepository,
    private readonly queue: NotificationQueue,
  ) {}

  /** After the commit, with the ids NotificationsOutbox returned. Never rejects; bounded like every after-commit hook. */
  async enqueue(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await waitBriefly(this.logger, `relay of ${ids.length} notification(s)`, 'the notifications re-drive will enqueue them', async () => {
      await this.queue.addNow(await this.repo.due(ids));
    });
  }
}
