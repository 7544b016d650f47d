import type { PaymentRequest, RequestSource } from '../domain/payment-request';
import type { ProofStatus, RequestStatus } from '../domain/transitions';
import type { PaymentRequestEntity } from './payment-request.entity';

/** A payment_requests row as the hand-written statements return it (numeric as string, timestamptz as Date). */
export interface RequestRow {
  id: string;
  partner_id: string;
  merchant_id: string;
  test_mode: boolean;
  status: RequestStatus;
  proof_status: ProofStatus;
  fiat_amount: number;
  fiat_currency: string;
  rate: string;
  amount: string;
  chain_id: string;
  token_address: string;
  recipient: string;
  memo: string | null;
  payment_mode: 'pos' | 'service';
  metadata: Record<string, string> | null;
  source: RequestSource;
  plan_id: string | null;
  period_index: number | null;
  customer_name: string | null;
  customer_email: string | null;
  customer_phone: string | null;
  expires_at: Date;
  claim_until: Date;
  created_at: Date;
  tx_hash: string | null;
  proof_source: string | null;
  payer_address: string | null;
  proof_verified_at: Date | null;
  verify_note: string | null;
}

export const REQUEST_COLUMNS = `id, partner_id, merchant_id, test_mode, status, proof_status, fiat_amount, fiat_currency,
  rate, amount, chain_id, token_address, recipient, memo, payment_mode, metadata, expires_at, claim_until, created_at,
  tx_hash, proof_source, payer_address, proof_verified_at, verify_note, source, plan_id, period_index, customer_name,
  customer_email, customer_phone`;

/** A row of a hand-written statement as the domain object; entityToDomain below does the same for entity reads. */
export function rowToDomain(r: RequestRow): PaymentRequest {
  return {
    id: r.id,
    partnerId: r.partner_id,
    merchantId: r.merchant_id,
    testMode: r.test_mode,
    status: r.status,
    proofStatus: r.proof_status,
    fiatAmount: r.fiat_amount,
    fiatCurrency: r.fiat_currency,
    rate: r.rate,
    amount: BigInt(r.amount),
    chainId: BigInt(r.chain_id),
    tokenAddress: r.token_address,
    recipient: r.recipient,
    memo: r.memo,
    paymentMode: r.payment_mode,
    metadata: r.metadata,
    source: r.source,
    planId: r.plan_id,
    periodIndex: r.period_index,
    customerName: r.customer_name,
    customerEmail: r.customer_email,
    customerPhone: r.customer_phone,
    expiresAt: r.expires_at,
    claimUntil: r.claim_until,
    createdAt: r.created_at,
    txHash: r.tx_hash,
    proofSource: r.proof_source,
    payerAddress: r.payer_address,
    proofVerifiedAt: r.proof_verified_at,
    verifyNote: r.verify_note,
  };
}

/** The same mapping for reads through the entity (TypeORM finds); keep the two in step. */
export function entityToDomain(e: PaymentRequestEntity): PaymentRequest {
  return {
    id: e.id,
    partnerId: e.partnerId,
    merchantId: e.merchantId,
    testMode: e.testMode,
    status: e.status,
    proofStatus: e.proofStatus,
    fiatAmount: e.fiatAmount,
    fiatCurrency: e.fiatCurrency,
    rate: e.rate,
    amount: e.amount,
    chainId: e.chainId,
    tokenAddress: e.tokenAddress,
    recipient: e.recipient,
    memo: e.memo,
    paymentMode: e.paymentMode,
    metadata: e.metadata,
    source: e.source,
    planId: e.planId,
    periodIndex: e.periodIndex,
    customerName: e.customerName,
    customerEmail: e.customerEmail,
    customerPhone: e.customerPhone,
    expiresAt: e.expiresAt,
    claimUntil: e.claimUntil,
    createdAt: e.createdAt,
    txHash: e.txHash,
    proofSource: e.proofSource,
    payerAddress: e.payerAddress,
    proofVerifiedAt: e.proofVerifiedAt,
    verifyNote: e.verifyNote,
  };
}
