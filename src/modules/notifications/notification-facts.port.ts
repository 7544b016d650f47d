import type { EntityManager } from 'typeorm';

/**
 * What a notification reads of its payment request: when it is built (at each attempt, so it shows the stored
 * request), and when an operator resends it (its partner for the audit row; its state, which must still call
 * for the message). Declared here, by the consumer; the requests module, which owns payment_requests,
 * provides it (`{ provide: NotificationRequestsPort, useExisting: … }`), so notifications never imports
 * requests, whose verification writes to this module's outbox.
 */
export interface NotifiedRequest {
  requestId: string;
  partnerId: string;
  merchantId: string;
  /** The status as shown now (a lapsed request reads as expired) and the proof's. */
  status: 'requested' | 'opened' | 'expired' | 'voided';
  proofStatus: 'none' | 'attached' | 'verified';
  /** A verified request whose claim finality lost (a reorg): verified still, but the money is not there. */
  claimLost: boolean;
  testMode: boolean;
  fiatAmount: number;
  fiatCurrency: string;
  amount: bigint;
  chainId: bigint;
  tokenAddress: string;
  txHash: string | null;
  expiresAt: Date;
  proofVerifiedAt: Date | null;
}

export abstract class NotificationRequestsPort {
  /** With `em` (a transaction), read FOR SHARE: a change to the request waits for em's transaction. */
  abstract notifiedRequest(requestId: string, em?: EntityManager): Promise<NotifiedRequest | null>;
}
