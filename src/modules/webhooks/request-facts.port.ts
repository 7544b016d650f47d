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
  /**
   * The facts of the request whose id is the SQL expression `requestId`, as SQL: a subquery of at most one row
   * whose columns are named as RequestFacts' fields, for the claim statement to read in a `LEFT JOIN LATERAL`.
   * A query rather than rows, so that the claim and the payload's read are one statement (one round trip and
   * one statement for Postgres per batch of attempts, not two: issue 14, docs/performance.md), while the text
   * that reads payment_requests stays in its owner's repository. Same text for the same argument.
   */
  abstract factsQuery(requestId: string): string;
}
