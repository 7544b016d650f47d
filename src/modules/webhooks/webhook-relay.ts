import { Injectable, Logger } from '@nestjs/common';
import { WebhookDeliveryQueue } from './webhook-delivery.queue';
import { WebhookEventsRepository } from './webhook-events.repository';

// An after-commit hook must not hold the caller's response hostage to a Redis outage.
const RELAY_TIMEOUT_MS = 2000;

/**
 * Moves outbox rows to the `webhooks` queue. Postgres is the system of record: whatever this fails to
 * enqueue, the outbox re-drive (OutboxRedrive, every 15 s) enqueues later, so no event is lost with Redis.
 */
@Injectable()
export class WebhookRelay {
  private readonly logger = new Logger('WebhookRelay');

  constructor(
    private readonly events: WebhookEventsRepository,
    private readonly queue: WebhookDeliveryQueue,
  ) {}

  /**
   * Call after the transaction that recorded the events has committed, with the ids EventOutbox.record()
   * returned. Events recorded while webhooks were off (deliver = false), or already relayed, are ignored.
   * Never rejects and returns within about 2 s: a failure is logged and left to the re-drive. Called before
   * the commit it finds nothing to relay (the rows are not visible yet) and the re-drive delivers them.
   */
  async enqueue(eventIds: string[]): Promise<void> {
    if (eventIds.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const work = (async () => {
      const due = await this.events.markRelayed(eventIds);
      await this.queue.addNow(due);
    })();
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), RELAY_TIMEOUT_MS);
    });
    try {
      const result = await Promise.race([work, deadline]);
      if (result === 'timeout') {
        this.logger.warn(`relay of ${eventIds.length} event(s) still pending after ${RELAY_TIMEOUT_MS} ms; the re-drive will cover it`);
        work.catch((e: Error) => this.logger.error(`relay failed, the re-drive will enqueue: ${e.message}`));
      }
    } catch (e) {
      this.logger.error(`relay failed, the re-drive will enqueue: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}
