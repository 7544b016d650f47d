import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** Every delivery attempt, stored (spec §6.5): one row per (event, attempt number). */
@Entity('webhook_attempts')
@Unique('webhook_attempts_event_id_attempt_key', ['eventId', 'attempt'])
@Check('webhook_attempts_outcome_check', `outcome IN ('delivered','retry','abandoned')`)
export class WebhookAttemptEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'webhook_attempts_pkey' })
  id!: string;

  @Column('uuid', { name: 'event_id' })
  eventId!: string;

  @ManyToOne('WebhookEventEntity', { nullable: false })
  @JoinColumn({ name: 'event_id', foreignKeyConstraintName: 'webhook_attempts_event_id_fkey' })
  event?: unknown;

  @Column('integer')
  attempt!: number;

  @Column('timestamp with time zone', { name: 'started_at', precision: 3 })
  startedAt!: Date;

  @Column('integer', { name: 'duration_ms' })
  durationMs!: number;

  @Column('integer', { name: 'status_code', nullable: true })
  statusCode!: number | null;

  @Column('text', { name: 'error_class', nullable: true })
  errorClass!: string | null;

  @Column('text', { name: 'error_message', nullable: true })
  errorMessage!: string | null;

  @Column('text')
  outcome!: 'delivered' | 'retry' | 'abandoned';
}
