import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/** portal_sessions: the SHA-256 of the cookie's token is the key; the token itself is never stored. */
@Entity('portal_sessions')
@Check('portal_sessions_id_check', 'octet_length(id) = 32')
@Index('portal_sessions_user', ['userId'])
@Index('portal_sessions_expiry', ['expiresAt'])
export class PortalSessionEntity {
  @PrimaryColumn('bytea', { primaryKeyConstraintName: 'portal_sessions_pkey' })
  id!: Buffer;

  @Column('uuid', { name: 'user_id' })
  userId!: string;

  @ManyToOne('PortalUserEntity', { nullable: false, onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'portal_sessions_user_id_fkey' })
  user?: unknown;

  @Column('text', { name: 'csrf_token' })
  csrfToken!: string;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 })
  expiresAt!: Date;

  @Column('timestamp with time zone', { name: 'last_seen_at', precision: 3, default: () => 'now()' })
  lastSeenAt!: Date;
}
