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

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
