import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import type { AlertKind } from './alert';

/** Conditions operators must look at, stored so they survive restarts and every instance sees them. */
@Entity('alerts')
@Check('alerts_kind_check', `kind IN ('verified_reorged', 'claim_unmovable')`)
@Index('alerts_created', ['createdAt', 'id'])
// One open alert per request and kind: a resolved one leaves room for the next.
@Index('alerts_request_kind', ['requestId', 'kind'], { unique: true, where: '(resolved_at IS NULL)' })
export class AlertEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'alerts_pkey' })
  id!: string;

  @Column('text')
  kind!: AlertKind;

  @Column('uuid', { name: 'request_id', nullable: true })
  requestId!: string | null;

  @ManyToOne('PaymentRequestEntity', { nullable: true })
  @JoinColumn({ name: 'request_id', foreignKeyConstraintName: 'alerts_request_id_fkey' })
  request?: unknown;

  @Column('jsonb', { default: () => `'{}'` })
  details!: Record<string, unknown>;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  /** When the condition cleared (finality saw a stuck claim move, settle or be lost); null while it holds. */
  @Column('timestamp with time zone', { name: 'resolved_at', precision: 3, nullable: true })
  resolvedAt!: Date | null;
}
