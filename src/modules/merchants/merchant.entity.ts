import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';

/**
 * merchants, owned by the merchants module. A wallet names at most one merchant (unique). Not declarable here,
 * so outside the drift check: the trigger merchants_currency_keeps_plans (migration 1764000400400) refuses a
 * display_currency change while the merchant has an active or paused plan in another currency.
 */
@Entity('merchants')
@Unique('merchants_wallet_address_key', ['walletAddress'])
@Unique('merchants_onboarding_token_hash_key', ['onboardingTokenHash'])
@Check('merchants_account_type_check', `account_type IN ('consumer','business')`)
@Check('merchants_wallet_address_check', `wallet_address ~ '^0x[0-9a-f]{40}$'`)
@Check('merchants_onboarding_status_check', `onboarding_status IN ('incomplete','complete')`)
@Index('merchants_partner_list', ['partnerId', 'testMode', 'createdAt', 'id'])
@Index('merchants_onboarding_previous_token', ['onboardingPreviousTokenHash'])
export class MerchantEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'merchants_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'merchants_partner_id_fkey' })
  partner?: unknown;

  @Column('boolean', { name: 'test_mode' })
  testMode!: boolean;

  @Column('text', { nullable: true })
  email!: string | null;

  @Column('text', { name: 'display_name', nullable: true })
  displayName!: string | null;

  @Column('text', { name: 'business_name', nullable: true })
  businessName!: string | null;

  @Column('text', { nullable: true })
  country!: string | null;

  @Column('text', { nullable: true })
  phone!: string | null;

  @Column('text', { nullable: true })
  website!: string | null;

  @Column('text', { nullable: true })
  instagram!: string | null;

  @Column('text', { nullable: true })
  industry!: string | null;

  @Column('text', { name: 'account_type', default: 'consumer' })
  accountType!: 'consumer' | 'business';

  @Column('text', { name: 'display_currency' })
  displayCurrency!: string;

  @Column('text', { name: 'wallet_address', nullable: true })
  walletAddress!: string | null;

  @Column('text', { name: 'onboarding_status', default: 'incomplete' })
  onboardingStatus!: 'incomplete' | 'complete';

  @Column('bytea', { name: 'onboarding_token_salt' })
  onboardingTokenSalt!: Buffer;

  @Column('bytea', { name: 'onboarding_token_hash' })
  onboardingTokenHash!: Buffer;

  /** When the current onboarding token was issued: it works for ONBOARDING_LINK_TTL_HOURS from then. */
  @Column('timestamp with time zone', { name: 'onboarding_link_issued_at', precision: 3, default: () => 'now()' })
  onboardingLinkIssuedAt!: Date;

  /** The token the current one replaced, so its page can say "expired" rather than "unknown". */
  @Column('bytea', { name: 'onboarding_previous_token_hash', nullable: true })
  onboardingPreviousTokenHash!: Buffer | null;

  @Column('text', { name: 'onboarding_nonce', nullable: true })
  onboardingNonce!: string | null;

  @Column('timestamp with time zone', { name: 'wallet_verified_at', precision: 3, nullable: true })
  walletVerifiedAt!: Date | null;

  @Column('text', { name: 'terms_version', nullable: true })
  termsVersion!: string | null;

  @Column('timestamp with time zone', { name: 'terms_accepted_at', precision: 3, nullable: true })
  termsAcceptedAt!: Date | null;

  @Column('boolean', { default: false })
  disabled!: boolean;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;
}
