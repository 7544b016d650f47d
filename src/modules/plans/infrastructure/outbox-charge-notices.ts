import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { NotificationRelay } from '../../notifications/notification-relay';
import { NotificationsOutbox } from '../../notifications/notifications-outbox';
import { PlanChargeNotices, type ChargeCreated } from '../application/charge-notices';

/** Charge notices through the notifications outbox (its module is global, in both roles). */
@Injectable()
export class OutboxChargeNotices extends PlanChargeNotices {
  constructor(
    private readonly outbox: NotificationsOutbox,
    private readonly relay: NotificationRelay,
  ) {
    super();
  }

  chargeCreated(em: EntityManager, charge: ChargeCreated): Promise<string[]> {
    return this.outbox.chargeCreated(em, charge);
  }

  committed(ids: string[]): Promise<void> {
    return this.relay.enqueue(ids);
  }
}
