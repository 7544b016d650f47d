import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import type { PauseReason, PlanStatus } from '../domain/plan';
import type { PlanInterval } from '../domain/schedule';

/**
 * plans, owned by the plans module. Mirrors migrations/1764000300000-plans.ts and the later plan-* ones exactly (the
 * drift spec checks it), except plans_due below and the BEFORE INSERT trigger plans_merchant_currency_holds
 * (migrations 1764000400400, 1764000402500): a plan is inserted only in its merchant's current currency.
 */
@Entity('plans')
@Unique('plans_token', ['token'])
@Check('plans_title_check', 'char_length(title) >= 1 AND char_length(title) <= 120')
@Check('plans_fiat_amount_check', 'fiat_amount > 0')
@Check('plans_interval_check', `"interval" IN ('day','week','month','year')`)
@Check('plans_interval_count_check', 'interval_count >= 1 AND interval_count <= 12')
@Check('plans_max_charges_check', 'max_charges >= 1')
@Check('plans_expiry_minutes_check', 'expiry_minutes > 0')
@Check('plans_status_check', `status IN ('active','paused','canceled','completed')`)
@Check('plans_pause_reason_value_check', `pause_reason IN ('merchant','unpaid')`)
@Check('plans_next_period_index_check', 'next_period_index >= 0')
@Check('plans_charges_created_check', 'charges_created >= 0')
@Check('plans_missed_in_row_check', 'missed_in_row >= 0')
@Check('plans_charge_failures_check', 'charge_failures >= 0')
@Check('plans_next_charge_check', `(status = 'active') = (next_charge_at IS NOT NULL)`)
@Check('plans_pause_reason_check', `(status = 'paused') = (pause_reason IS NOT NULL)`)
// The scheduler's selection: active plans by the time they are next tried, GREATEST(next_charge_at, retry_at)
// WHERE status = 'active'. An expression TypeORM cannot declare: the migration owns it, the drift check skips it.
@Index('plans_due', { synchronize: false })
@Index('plans_merchant_list', ['merchantId', 'createdAt', 'id'])
// One plan per (merchant, Idempotency-Key): migrations/1764000400500-plan-idempotency.ts.
@Index('plans_idempotency', ['merchantId', 'idempotencyKey'], { unique: true, where: '(idempotency_key IS NOT NULL)' })
export class PlanEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'plans_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'plans_partner_id_fkey' })
  partner?: unknown;

  @Column('uuid', { name: 'merchant_id' })
  merchantId!: string;

  @ManyToOne('MerchantEntity', { nullable: false })
  @JoinColumn({ name: 'merchant_id', foreignKeyConstraintName: 'plans_merchant_id_fkey' })
  merchant?: unknown;

  @Column('boolean', { name: 'test_mode' })
  testMode!: boolean;

  @Column('text')
  token!: string;

  @Column('text')
  title!: string;

  @Column('integer', { name: 'fiat_amount' })
  fiatAmount!: number;

  @Column('text', { name: 'fiat_currency' })
  fiatCurrency!: string;

  @Column('text')
  interval!: PlanInterval;

  @Column('integer', { name: 'interval_count' })
  intervalCount!: number;

  @Column('timestamp with time zone', { name: 'start_at', precision: 3 })
  startAt!: Date;

  @Column('integer', { name: 'max_charges', nullable: true })
  maxCharges!: number | null;

  @Column('integer', { name: 'expiry_minutes' })
  expiryMinutes!: number;

  @Column('text', { name: 'payer_name', nullable: true })
  payerName!: string | null;

  @Column('text', { name: 'payer_email', nullable: true })
  payerEmail!: string | null;

  @Column('json', { default: () => `'{}'` })
  metadata!: Record<string, string>;

  /** The create's Idempotency-Key (dashboard form), null without one. */
  @Column('text', { name: 'idempotency_key', nullable: true })
  idempotencyKey!: string | null;

  @Column('text', { default: 'active' })
  status!: PlanStatus;

  @Column('text', { name: 'pause_reason', nullable: true })
  pauseReason!: PauseReason | null;

  @Column('integer', { name: 'next_period_index', default: 0 })
  nextPeriodIndex!: number;

  @Column('timestamp with time zone', { name: 'next_charge_at', precision: 3, nullable: true })
  nextChargeAt!: Date | null;

  @Column('integer', { name: 'charges_created', default: 0 })
  chargesCreated!: number;

  @Column('integer', { name: 'missed_in_row', default: 0 })
  missedInRow!: number;

  @Column('integer', { name: 'latest_charge_period', nullable: true })
  latestChargePeriod!: number | null;

  @Column('integer', { name: 'charge_failures', default: 0 })
  chargeFailures!: number;

  @Column('timestamp with time zone', { name: 'retry_at', precision: 3, nullable: true })
  retryAt!: Date | null;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
