import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';

export type PortalRole = 'admin' | 'member';
export const PORTAL_ROLES: readonly PortalRole[] = ['admin', 'member'];

/** portal_users, owned by the portal module: a partner's people, signing in with email and password. */
@Entity('portal_users')
@Unique('portal_users_email_key', ['email'])
@Check('portal_users_email_check', `email = lower(email) AND length(email) BETWEEN 3 AND 254`)
@Check('portal_users_role_check', `role IN ('admin','member')`)
@Index('portal_users_partner', ['partnerId'])
export class PortalUserEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'portal_users_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'portal_users_partner_id_fkey' })
  partner?: unknown;

  @Column('text')
  email!: string;

  @Column('text', { name: 'password_hash' })
  passwordHash!: string;

  /** admin: manages the partner's portal users as well; member: everything else. */
  @Column('text')
  role!: PortalRole;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;
}
