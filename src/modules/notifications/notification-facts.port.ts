/**
 * What a notification reads of its payment request when it is built (at each attempt, so it shows the
 * stored request). Declared here, by the consumer; the requests module, which owns payment_requests,
 * provides it (`{ provide: NotificationRequestsPort, useExisting: … }`), so notifications never imports
 * requests, whose verification writes to this module's outbox.
 */
export interface NotifiedRequest {
  requestId: string;
  partnerId: string;
  merchantId: string;
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
  abstract notifiedRequest(requestId: string): Promise<NotifiedRequest | null>;
}
