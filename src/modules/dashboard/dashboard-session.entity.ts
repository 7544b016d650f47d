import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/** dashboard_sessions: keyed by the SHA-256 of the cookie's token; the token itself is never stored. */
@Entity('dashboard_sessions')
@Check('dashboard_sessions_id_check', 'octet_length(id) = 32')
@Index('dashboard_sessions_merchant', ['merchantId'])
@Index('dashboard_sessions_expiry', ['expiresAt'])
export class DashboardSessionEntity {
  @PrimaryColumn('bytea', { primaryKeyConstraintName: 'dashboard_sessions_pkey' })
  id!: Buffer;

  @Column('uuid', { name: 'merchant_id' })
  merchantId!: string;

  @ManyToOne('MerchantEntity', { nullable: false, onDelete: 'CASCADE' })
  @JoinColumn({ name: 'merchant_id', foreignKeyConstraintName: 'dashboard_sessions_merchant_id_fkey' })
  merchant?: unknown;

  @Column('text', { name: 'csrf_token' })
  csrfToken!: string;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 })
  expiresAt!: Date;

  @Column('timestamp with time zone', { name: 'last_seen_at', precision: 3, default: () => 'now()' })
  lastSeenAt!: Date;
}
