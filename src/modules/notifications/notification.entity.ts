import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import { checkIn } from '../../database/state-test';
import { NOTIFICATION_STATUSES, type NotificationChannel, type NotificationKind, type NotificationStatus } from './notification';

/** The notifications outbox (DESIGN §6): one row per message, written beside the change that causes it. */
@Entity('notifications')
@Check('notifications_kind_check', `kind IN ('receipt','charge_notice','merchant_note')`)
@Check('notifications_channel_check', `channel IN ('email','sms')`)
@Check('notifications_status_check', checkIn('status', NOTIFICATION_STATUSES))
@Unique('notifications_request_kind_channel', ['requestId', 'kind', 'channel'])
@Unique('notifications_message_id_key', ['messageId'])
@Index('notifications_due', ['nextAttemptAt'], { where: `(status = 'pending'::text)` })
@Index('notifications_unsent', ['createdAt', 'id'], { where: `(status = ANY (ARRAY['failed'::text, 'abandoned'::text]))` })
export class NotificationEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'notifications_pkey' })
  id!: string;

  @Column('text')
  kind!: NotificationKind;

  @Column('text')
  channel!: NotificationChannel;

  @Column('text')
  to!: string;

  @Column('uuid', { name: 'request_id' })
  requestId!: string;

  @ManyToOne('PaymentRequestEntity', { nullable: false })
  @JoinColumn({ name: 'request_id', foreignKeyConstraintName: 'notifications_request_id_fkey' })
  request?: unknown;

  @Column('uuid', { name: 'plan_id', nullable: true })
  planId!: string | null;

  @Column('integer', { name: 'period_index', nullable: true })
  periodIndex!: number | null;

  @Column('timestamp with time zone', { name: 'due_at', precision: 3, nullable: true })
  dueAt!: Date | null;

  @Column('text', { default: 'pending' })
  status!: NotificationStatus;

  @Column('text', { name: 'message_id' })
  messageId!: string;

  @Column('integer', { default: 0 })
  attempts!: number;

  @Column('timestamp with time zone', { name: 'next_attempt_at', precision: 3, default: () => 'now()' })
  nextAttemptAt!: Date;

  @Column('timestamp with time zone', { name: 'lease_until', precision: 3, nullable: true })
  leaseUntil!: Date | null;

  /** The claim of the attempt under way: the worker's own id for it (migration 1764000403200, NotificationSender). */
  @Column('uuid', { name: 'claim_token', nullable: true })
  claimToken!: string | null;

  @Column('text', { name: 'last_error', nullable: true })
  lastError!: string | null;

  @Column('timestamp with time zone', { name: 'sent_at', precision: 3, nullable: true })
  sentAt!: Date | null;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  /** When an operator last sent it again (it had failed or been abandoned): its retries' 24 hours count from here. */
  @Column('timestamp with time zone', { name: 'resent_at', precision: 3, nullable: true })
  resentAt!: Date | null;
}
