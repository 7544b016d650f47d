/**
 * What a delivery reads of a payment request at each attempt (spec §6.3: the payload reflects the stored
 * request). Declared here, by the consumer; the requests module, which owns payment_requests, provides the
 * implementation (`{ provide: RequestFactsPort, useExisting: … }`), so webhooks never imports requests.
 */
export interface RequestFacts {
  requestId: string;
  merchantId: string;
  proofStatus: string;
  proofSource: string | null;
  txHash: string | null;
  payerAddress: string | null;
  metadata: Record<string, unknown> | null;
}

export abstract class RequestFactsPort {
  /** The facts of each id that exists, read in one round trip (deliveries are claimed in batches). */
  abstract factsFor(requestIds: readonly string[]): Promise<Map<string, RequestFacts>>;
}
