import type { ProofStatus, RequestStatus } from './transitions';

/** The stored request as the domain sees it: no ORM, no HTTP. */
export interface PaymentRequest {
  id: string;
  partnerId: string;
  merchantId: string;
  testMode: boolean;
  status: RequestStatus;
  proofStatus: ProofStatus;
  fiatAmount: number;
  fiatCurrency: string;
  rate: string;
  amount: bigint;
  chainId: bigint;
  tokenAddress: string;
  recipient: string;
  memo: string | null;
  paymentMode: 'pos' | 'service';
  metadata: Record<string, string>;
  expiresAt: Date;
  claimUntil: Date;
  createdAt: Date;
  txHash: string | null;
  proofSource: string | null;
  payerAddress: string | null;
  proofVerifiedAt: Date | null;
  /** Why the attached hash pays nothing (a pay-rule reason, or transaction_not_found), when known. */
  verifyNote: string | null;
}
