import { Injectable, Logger } from '@nestjs/common';
import { MicroBatch } from '../../common/micro-batch';
import { waitBriefly } from '../../common/queue/after-commit-wait';
import { WebhookDeliveryQueue } from './webhook-delivery.queue';
import { WebhookEventsRepository } from './webhook-events.repository';

/**
 * Moves outbox rows to the `webhooks` queue. Postgres is the system of record: whatever this fails to
 * enqueue, the outbox re-drive (OutboxRedrive, every 15 s) enqueues later, so no event is lost with Redis.
 */
@Injectable()
export class WebhookRelay {
  private readonly logger = new Logger('WebhookRelay');
  /**
   * Transactions that commit in one event-loop turn share one relay: one UPDATE and one admission per partner
   * for all their events (at 1,000 events/s the API commits several per turn). A failure fails them all,
   * and the re-drive carries them, as it would each alone.
   */
  private readonly relays = new MicroBatch<string[], void>(async (lists) => {
    await this.queue.addNow(await this.events.markRelayed(lists.flat()));
    return lists.map(() => undefined);
  });

  constructor(
    private readonly events: WebhookEventsRepository,
    private readonly queue: WebhookDeliveryQueue,
  ) {}

  /**
   * Call after the transaction that recorded the events has committed, with the ids EventOutbox.record()
   * returned. Events recorded while webhooks were off (deliver = false), or already relayed, are ignored.
   * Never rejects and returns within AFTER_COMMIT_WAIT_MS (an after-commit hook must not hold the response
   * hostage to a Redis outage): a failure is logged and left to the re-drive. Called before
   * the commit it finds nothing to relay (the rows are not visible yet) and the re-drive delivers them.
   */
  async enqueue(eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return;
    await waitBriefly(this.logger, `relay of ${eventIds.length} event(s)`, 'the outbox re-drive will enqueue them', () => this.relays.submit(eventIds));
  }
}
