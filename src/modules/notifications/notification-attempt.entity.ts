import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import type { AttemptOutcome } from './notification';

/** Every attempt to send a notification: 'sending' from the claim until its outcome is recorded. */
@Entity('notification_attempts')
@Unique('notification_attempts_notification_attempt', ['notificationId', 'attempt'])
@Check('notification_attempts_outcome_check', `outcome IN ('sending','sent','retry','failed','abandoned','in_doubt')`)
export class NotificationAttemptEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'notification_attempts_pkey' })
  id!: string;

  @Column('uuid', { name: 'notification_id' })
  notificationId!: string;

  @ManyToOne('NotificationEntity', { nullable: false })
  @JoinColumn({ name: 'notification_id', foreignKeyConstraintName: 'notification_attempts_notification_id_fkey' })
  notification?: unknown;

  @Column('integer')
  attempt!: number;

  @Column('timestamp with time zone', { name: 'started_at', precision: 3, default: () => 'now()' })
  startedAt!: Date;

  @Column('timestamp with time zone', { name: 'finished_at', precision: 3, nullable: true })
  finishedAt!: Date | null;

  /** When the message was about to reach the server (migration 1764000403300); null: nothing handed over yet. */
  @Column('timestamp with time zone', { name: 'handed_over_at', precision: 3, nullable: true })
  handedOverAt!: Date | null;

  /**
   * Claimed by a worker that stores handedOverAt (migration 1764000403400): only then does a missing mark mean
   * nothing was handed over. False on attempts of workers from before the mark (a rolling deploy).
   */
  @Column('boolean', { name: 'handover_tracked', default: false })
  handoverTracked!: boolean;

  @Column('text')
  outcome!: AttemptOutcome;

  /** The address this attempt was for (a merchant's note follows the merchant's email); null: never claimed (not built, no longer fitting), or stored before. */
  @Column('text', { nullable: true })
  to!: string | null;

  @Column('text', { nullable: true })
  error!: string | null;

  @Column('text', { nullable: true })
  response!: string | null;
}
