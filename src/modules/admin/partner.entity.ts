import { Column, Entity, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** partners, owned by the admin module. */
@Entity('partners')
@Unique('partners_slug_key', ['slug'])
export class PartnerEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'partners_pkey' })
  id!: string;

  @Column('text')
  slug!: string;

  @Column('text')
  name!: string;

  @Column('text', { name: 'default_currency' })
  defaultCurrency!: string;

  @Column('integer', { name: 'allowed_expiry_minutes', array: true })
  allowedExpiryMinutes!: number[];

  @Column('integer', { name: 'default_expiry_minutes' })
  defaultExpiryMinutes!: number;

  // Webhook settings: they move to webhook_endpoints (webhooks module) with the migration that creates it.
  @Column('text', { name: 'webhook_url', nullable: true })
  webhookUrl!: string | null;

  @Column('boolean', { name: 'webhook_enabled', default: false })
  webhookEnabled!: boolean;

  @Column('timestamp with time zone', { name: 'webhook_enabled_at', precision: 3, nullable: true })
  webhookEnabledAt!: Date | null;

  @Column('text', { name: 'webhook_secret', nullable: true })
  webhookSecret!: string | null;

  @Column('text', { name: 'webhook_previous_secret', nullable: true })
  webhookPreviousSecret!: string | null;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
