import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, Unique } from 'typeorm';
import { checkIn } from '../../../database/state-test';
import { bigintColumn } from '../../../database/transformers';
import type { RequestSource } from '../domain/payment-request';
import { PROOF_STATUSES, REQUEST_STATUSES, type ProofStatus, type RequestStatus } from '../domain/transitions';

/**
 * payment_requests, owned by the requests module. Mirrors migrations/ exactly (the drift spec checks it), except
 * what TypeORM cannot declare: the BEFORE INSERT trigger payment_requests_merchant_holds (migrations 1764000001000,
 * 1764000402500, 1764000402900, 1764000403100) takes the merchant's shared "holds" lock, refuses a row its
 * merchant no longer accepts as priced or whose api_key_id is revoked, and stamps a defaulted created_at with
 * the insert's time; and the extended statistics payment_requests_state_stats (1764000400000).
 */
@Entity('payment_requests')
@Unique('payment_requests_idempotency', ['partnerId', 'merchantId', 'idempotencyKey'])
@Check('payment_requests_status_check', checkIn('status', REQUEST_STATUSES))
@Check('payment_requests_proof_status_check', checkIn('proof_status', PROOF_STATUSES))
@Check('payment_requests_fiat_amount_check', 'fiat_amount > 0')
@Check('payment_requests_amount_check', 'amount > 0')
@Check('payment_requests_payment_mode_check', `payment_mode IN ('pos','service')`)
@Check('payment_requests_source_check', `source IN ('partner','dashboard','plan','handle')`)
// One charge per plan period, whatever the number of workers, retries or restarts (DESIGN §5).
@Index('payment_requests_plan_period', ['planId', 'periodIndex'], { unique: true, where: '(plan_id IS NOT NULL)' })
// Holds an amount for a merchant and asset while a transfer may still pay the request (DESIGN §3).
@Index('payment_requests_open_amount', ['merchantId', 'chainId', 'tokenAddress', 'amount'], { unique: true, where: 'amount_locked' })
// One transfer (chain, tx, log) pays at most one request: two concurrent claims cannot both win.
@Index('payment_requests_claim', ['chainId', 'txHash', 'claimedLogIndex'], { unique: true, where: '(claimed_log_index IS NOT NULL)' })
@Index('payment_requests_list', ['partnerId', 'testMode', 'createdAt', 'id'])
@Index('payment_requests_merchant_list', ['merchantId', 'createdAt', 'id'])
// One ordered range per (status, proof_status) pair: the list filters read only the rows they return (issue 14).
@Index('payment_requests_state_list', ['partnerId', 'testMode', 'status', 'proofStatus', 'createdAt', 'id'])
@Index('payment_requests_merchant_state_list', ['merchantId', 'status', 'proofStatus', 'createdAt', 'id'])
@Index('payment_requests_merchant_source_list', ['merchantId', 'source', 'status', 'proofStatus', 'createdAt', 'id'])
@Index('payment_requests_tx', ['chainId', 'txHash'], { where: '(tx_hash IS NOT NULL)' })
// The expiry sweep's amounts to free: locked ones per asset by the end of their claim window.
@Index('payment_requests_locked_until', ['chainId', 'tokenAddress', 'claimUntil'], { where: 'amount_locked' })
// What a transfer (chain, token, recipient, amount) may pay, and the wallets the chain scan watches: every held
// amount, verified or not, so a second transfer paying a verified request again is seen (and kept as unmatched).
@Index('payment_requests_claimable', ['chainId', 'tokenAddress', 'recipient', 'amount'], { where: 'amount_locked' })
// The sweep's lapsed requests by deadline; partner, status and id let status=expired read a partner's own from
// the index alone (issue 14).
@Index('payment_requests_expiring', ['expiresAt', 'partnerId', 'status', 'id'], {
  where: `((status = ANY (ARRAY['requested'::text, 'opened'::text])) AND (proof_status = 'none'::text))`,
})
// The finality job's selection: verified claims not yet settled nor lost (DESIGN §7).
@Index('payment_requests_unsettled', ['chainId', 'tokenAddress', 'claimedBlockNumber'], {
  where: `((proof_status = 'verified'::text) AND (claim_settled_at IS NULL) AND (claim_lost_at IS NULL))`,
})
// An attached proof that has not verified lapses when the claim window closes (DESIGN §7).
@Index('payment_requests_attached_expiring', ['claimUntil', 'partnerId', 'status', 'id'], {
  where: `((status = ANY (ARRAY['requested'::text, 'opened'::text])) AND (proof_status = 'attached'::text))`,
})
export class PaymentRequestEntity {
  @PrimaryColumn('uuid', { primaryKeyConstraintName: 'payment_requests_pkey' })
  id!: string;

  @Column('uuid', { name: 'partner_id' })
  partnerId!: string;

  @ManyToOne('PartnerEntity', { nullable: false })
  @JoinColumn({ name: 'partner_id', foreignKeyConstraintName: 'payment_requests_partner_id_fkey' })
  partner?: unknown;

  @Column('uuid', { name: 'merchant_id' })
  merchantId!: string;

  @ManyToOne('MerchantEntity', { nullable: false })
  @JoinColumn({ name: 'merchant_id', foreignKeyConstraintName: 'payment_requests_merchant_id_fkey' })
  merchant?: unknown;

  @Column('boolean', { name: 'test_mode' })
  testMode!: boolean;

  @Column('text', { name: 'idempotency_key' })
  idempotencyKey!: string;

  @Column('text', { default: 'requested' })
  status!: RequestStatus;

  @Column('text', { name: 'proof_status', default: 'none' })
  proofStatus!: ProofStatus;

  @Column('integer', { name: 'fiat_amount' })
  fiatAmount!: number;

  @Column('text', { name: 'fiat_currency' })
  fiatCurrency!: string;

  /** Fiat units per one token, a decimal string: never a float. */
  @Column('numeric')
  rate!: string;

  @Column('numeric', { precision: 78, scale: 0, transformer: bigintColumn })
  amount!: bigint;

  @Column('numeric', { name: 'chain_id', precision: 78, scale: 0, transformer: bigintColumn })
  chainId!: bigint;

  @Column('text', { name: 'token_address' })
  tokenAddress!: string;

  @Column('text')
  recipient!: string;

  @Column('boolean', { name: 'amount_locked', default: true })
  amountLocked!: boolean;

  @Column('text', { nullable: true })
  memo!: string | null;

  @Column('text', { name: 'payment_mode' })
  paymentMode!: 'pos' | 'service';

  @Column('text', { name: 'customer_name', nullable: true })
  customerName!: string | null;

  @Column('text', { name: 'customer_email', nullable: true })
  customerEmail!: string | null;

  @Column('text', { name: 'customer_phone', nullable: true })
  customerPhone!: string | null;

  /** null for dashboard and handle requests (spec §6.3); the partner API stores `{}` when none is sent. */
  @Column('json', { nullable: true, default: () => `'{}'` })
  metadata!: Record<string, string> | null;

  /** Where the request came from: the partner API, the merchant's dashboard, a plan's charge, the handle page. */
  @Column('text', { default: 'partner' })
  source!: RequestSource;

  /** The plan and period a plan charge belongs to (the plans module owns the plans table). */
  @Column('uuid', { name: 'plan_id', nullable: true })
  planId!: string | null;

  @ManyToOne('PlanEntity', { nullable: true })
  @JoinColumn({ name: 'plan_id', foreignKeyConstraintName: 'payment_requests_plan_id_fkey' })
  plan?: unknown;

  @Column('integer', { name: 'period_index', nullable: true })
  periodIndex!: number | null;

  /** The partner API key that created it; null for dashboard, handle and plan creates (migration 1764000403100). */
  @Column('uuid', { name: 'api_key_id', nullable: true })
  apiKeyId!: string | null;

  @Column('timestamp with time zone', { name: 'expires_at', precision: 3 })
  expiresAt!: Date;

  @Column('timestamp with time zone', { name: 'claim_until', precision: 3 })
  claimUntil!: Date;

  @Column('timestamp with time zone', { name: 'created_at', precision: 3, default: () => 'now()' })
  createdAt!: Date;

  @Column('timestamp with time zone', { name: 'updated_at', precision: 3, default: () => 'now()' })
  updatedAt!: Date;

  @Column('timestamp with time zone', { name: 'opened_at', precision: 3, nullable: true })
  openedAt!: Date | null;

  @Column('timestamp with time zone', { name: 'voided_at', precision: 3, nullable: true })
  voidedAt!: Date | null;

  @Column('timestamp with time zone', { name: 'expired_at', precision: 3, nullable: true })
  expiredAt!: Date | null;

  @Column('text', { name: 'tx_hash', nullable: true })
  txHash!: string | null;

  @Column('timestamp with time zone', { name: 'proof_attached_at', precision: 3, nullable: true })
  proofAttachedAt!: Date | null;

  @Column('text', { name: 'proof_source', nullable: true })
  proofSource!: string | null;

  @Column('text', { name: 'payer_address', nullable: true })
  payerAddress!: string | null;

  @Column('timestamp with time zone', { name: 'proof_verified_at', precision: 3, nullable: true })
  proofVerifiedAt!: Date | null;

  @Column('integer', { name: 'claimed_log_index', nullable: true })
  claimedLogIndex!: number | null;

  @Column('text', { name: 'verify_note', nullable: true })
  verifyNote!: string | null;

  /** The block that held the claimed log when it was last read canonical (DESIGN §7 "Finality"). */
  @Column('bigint', { name: 'claimed_block_number', nullable: true, transformer: bigintColumn })
  claimedBlockNumber!: bigint | null;

  @Column('text', { name: 'claimed_block_hash', nullable: true })
  claimedBlockHash!: string | null;

  /** Re-read at twice the confirmation depth (or finalized) and still there: no longer re-read. */
  @Column('timestamp with time zone', { name: 'claim_settled_at', precision: 3, nullable: true })
  claimSettledAt!: Date | null;

  /** The claimed log vanished after verification (a reorg): reported in alerts, proof_status kept. */
  @Column('timestamp with time zone', { name: 'claim_lost_at', precision: 3, nullable: true })
  claimLostAt!: Date | null;
}
