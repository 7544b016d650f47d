import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/** The current rate of each fiat currency: fiat units per one token, a decimal string (never a float). */
@Entity('rates')
@Check('rates_currency_check', `currency ~ '^[a-z]{3}$'`)
@Check('rates_rate_check', 'rate > 0')
export class RateEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'rates_pkey' })
  currency!: string;

  @Column('numeric')
  rate!: string;

  @Column('text')
  source!: string;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
