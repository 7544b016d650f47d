import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RequestFactsPort, type RequestFacts } from './request-facts.port';

/**
 * TEMPORARY — removed at merge: the requests module provides RequestFactsPort. Only here so the webhooks
 * branch runs on its own; it reads payment_requests, which webhooks does not own.
 */
@Injectable()
export class TemporaryRequestFacts extends RequestFactsPort {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async factsFor(requestIds: readonly string[]): Promise<Map<string, RequestFacts>> {
    const rows = await this.dataSource.manager.query<
      Array<{ id: string; merchant_id: string; proof_status: string; proof_source: string | null; tx_hash: string | null; payer_address: string | null; metadata: Record<string, unknown> | null }>
    >(
      `SELECT id, merchant_id, proof_status, proof_source, tx_hash, payer_address, metadata FROM payment_requests WHERE id = ANY($1::uuid[])`,
      [requestIds],
    );
    return new Map(
      rows.map((r) => [
        r.id,
        { requestId: r.id, merchantId: r.merchant_id, proofStatus: r.proof_status, proofSource: r.proof_source, txHash: r.tx_hash, payerAddress: r.payer_address, metadata: r.metadata },
      ]),
    );
  }
}
