import type { ProofStatus, RequestStatus } from './transitions';

/** Where a request was created (DESIGN §5). */
export const REQUEST_SOURCES = ['partner', 'dashboard', 'plan', 'handle'] as const;
export type RequestSource = (typeof REQUEST_SOURCES)[number];

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
  /** Exactly what the partner sent (`{}` for none); null for dashboard and handle requests (spec §6.3). */
  metadata: Record<string, string> | null;
  source: RequestSource;
  planId: string | null;
  periodIndex: number | null;
  customerName: string | null;
  customerEmail: string | null;
  customerPhone: string | null;
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
