import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';

/**
 * A partner's one webhook URL and its secrets (DESIGN §3), owned by the webhooks module; moved out of
 * partners so that table has one owner. previous_secret is set only while a rotation is unconfirmed.
 */
@Entity('webhook_endpoints')
export class WebhookEndpointEntity {
  @PrimaryColumn('uuid', { name: 'partner_id', primaryKeyConstraintName: 'webhook_endpoints_pkey' })
  partnerId!: string;

  @OneToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'webhook_endpoints_partner_id_fkey' })
  partner?: unknown;

  @Column('text', { nullable: true })
  url!: string | null;

  @Column('boolean', { default: false })
  enabled!: boolean;

  @Column('timestamp with time zone', { name: 'enabled_at', precision: 3, nullable: true })
  enabledAt!: Date | null;

  @Column('text', { nullable: true })
  secret!: string | null;

  @Column('text', { name: 'previous_secret', nullable: true })
  previousSecret!: string | null;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
