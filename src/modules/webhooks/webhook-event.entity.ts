import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { checkIn } from '../../database/state-test';

/** Every state of a delivery; the table's check constraint is built from this list. */
export const DELIVERY_STATES = ['pending', 'delivering', 'delivered', 'abandoned', 'skipped'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/**
 * The outbox: one row per event, written in the transaction of the state change that caused it. id is the
 * delivery_id partners see; deliver is false for events recorded while webhooks were off.
 */
@Entity('webhook_events')
@Check('webhook_events_event_check', `event IN ('payment.proof_attached','payment.proof_verified')`)
@Check('webhook_events_state_check', checkIn('state', DELIVERY_STATES))
@Index('webhook_events_partner', ['partnerId', 'state', 'recordedAt', 'id'])
@Index('webhook_events_request', ['requestId'])
@Index('webhook_events_open', ['partnerId', 'nextAttemptAt'], { where: `(state = ANY (ARRAY['pending'::text, 'delivering'::text]))` })
export class WebhookEventEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'webhook_events_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'webhook_events_partner_id_fkey' })
  partner?: unknown;

  @Column('uuid', { name: 'request_id' })
  requestId!: string;

  @ManyToOne('PaymentRequestEntity', { nullable: false })
  @JoinColumn({ name: 'request_id', foreignKeyConstraintName: 'webhook_events_request_id_fkey' })
  request?: unknown;

  @Column('text')
  event!: 'payment.proof_attached' | 'payment.proof_verified';

  @Column('boolean', { name: 'test_mode' })
  testMode!: boolean;

  @Column('boolean')
  deliver!: boolean;

  @Column('text')
  state!: DeliveryState;

  @Column('integer', { default: 0 })
  attempts!: number;

  @Column('timestamp with time zone', { name: 'next_attempt_at', precision: 3, nullable: true })
  nextAttemptAt!: Date | null;

  @Column('timestamp with time zone', { name: 'last_attempt_at', precision: 3, nullable: true })
  lastAttemptAt!: Date | null;

  @Column('timestamp with time zone', { name: 'delivered_at', precision: 3, nullable: true })
  deliveredAt!: Date | null;

  @Column('timestamp with time zone', { name: 'recorded_at', precision: 3, default: () => 'now()' })
  recordedAt!: Date;

  @Column('timestamp with time zone', { name: 'relayed_at', precision: 3, nullable: true })
  relayedAt!: Date | null;
}
